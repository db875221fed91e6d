// The Node.js flags the benches start forwarding nodes with: those the local cloud and docker-compose use
// (scripts/topology.mjs NODE_PROCESS_ARGS), or NODE_ARGS to compare (`NODE_ARGS=` runs V8's defaults).
import { NODE_PROCESS_ARGS } from '../scripts/topology.mjs';

export const nodeArgs =
  process.env.NODE_ARGS === undefined ? NODE_PROCESS_ARGS : process.env.NODE_ARGS.split(' ').filter(Boolean);
