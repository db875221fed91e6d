import type { Command } from '../command.js';
import { crud, topScope } from './crud.js';
import { readArgFile } from './shared.js';

export const certificateCommands: Command[] = crud(
  {
    group: 'cert',
    noun: 'certificate',
    prefix: 'cert',
    ref: 'CERT',
    scope: topScope('/v1/certificates'),
    columns: [
      { header: 'ID', value: 'id' },
      { header: 'NAME', value: 'name' },
      { header: 'SUBJECT', value: 'subject' },
      { header: 'NOT AFTER', value: 'notAfter' },
      { header: 'SANS', value: 'sans' },
    ],
    fields: [
      { flag: 'name', path: 'name', valueName: 'NAME', description: 'its name', on: ['create'] },
      {
        flag: 'cert-file',
        path: 'certificate',
        valueName: 'FILE',
        description: 'PEM certificate (chain) file',
        on: ['create'],
        convert: (ctx, v) => readArgFile(ctx, v as string, 'certificate file'),
      },
      {
        flag: 'key-file',
        path: 'privateKey',
        valueName: 'FILE',
        description: 'PEM private key file (sent once, never printed)',
        on: ['create'],
        convert: (ctx, v) => readArgFile(ctx, v as string, 'key file'),
      },
    ],
    examples: {
      list: ['slb cert list'],
      get: ['slb cert get example-com'],
      create: ['slb cert create --name example-com --cert-file fullchain.pem --key-file privkey.pem'],
      delete: ['slb cert delete example-com'],
    },
  },
  ['list', 'get', 'create', 'delete'],
);
