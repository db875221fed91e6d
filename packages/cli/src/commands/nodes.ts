import type { Command } from '../command.js';
import { crud, topScope } from './crud.js';

export const nodeCommands: Command[] = crud(
  {
    group: 'node',
    noun: 'node',
    prefix: 'node',
    ref: 'NODE',
    scope: topScope('/v1/nodes'),
    columns: [
      { header: 'ID', value: 'id' },
      { header: 'NAME', value: 'name' },
      { header: 'KIND', value: 'kind' },
      { header: 'ADDRESS', value: 'address' },
      { header: 'STATUS', value: 'status' },
      { header: 'WEIGHT', value: 'capacityWeight' },
      { header: 'DRAIN', value: 'drain' },
      { header: 'CONFIG', value: 'appliedConfigVersion' },
      { header: 'LAST HEARTBEAT', value: 'lastHeartbeatAt' },
    ],
    fields: [
      { flag: 'capacity-weight', path: 'capacityWeight', kind: 'int', valueName: 'N', description: 'share of new LBs' },
      { flag: 'drain', path: 'drain', kind: 'bool', valueName: 'true|false', description: 'take no new placements' },
    ],
    examples: {
      list: ['slb node list'],
      get: ['slb node get l4-a'],
      update: ['slb node update l4-a --drain true', 'slb node update node-0123456789abcdefghij --capacity-weight 50'],
    },
  },
  ['list', 'get', 'update'],
);
