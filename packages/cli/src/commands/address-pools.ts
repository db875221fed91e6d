import type { Command } from '../command.js';
import { crud, topScope } from './crud.js';

export const addressPoolCommands: Command[] = crud(
  {
    group: 'address-pool',
    noun: 'address pool',
    prefix: 'pool',
    ref: 'POOL',
    refHelp: 'address pool id or CIDR',
    scope: topScope('/v1/address-pools'),
    etag: false,
    idempotent: false,
    matches: (p, r) => p.cidr === r,
    columns: [
      { header: 'ID', value: 'id' },
      { header: 'CIDR', value: 'cidr' },
      { header: 'ALLOCATED', value: 'allocated' },
      { header: 'HELD', value: 'held' },
      { header: 'CAPACITY', value: 'capacity' },
      { header: 'DESCRIPTION', value: 'description' },
    ],
    fields: [
      { flag: 'cidr', path: 'cidr', valueName: 'CIDR', description: 'the pool', on: ['create'] },
      { flag: 'description', path: 'description', valueName: 'TEXT', description: 'free text', on: ['create'] },
    ],
    examples: {
      list: ['slb address-pool list'],
      get: ['slb address-pool get 127.1.0.0/16'],
      create: ['slb address-pool create --cidr 198.51.100.0/24 --description edge'],
      delete: ['slb address-pool delete 198.51.100.0/24'],
    },
  },
  ['list', 'get', 'create', 'delete'],
);
