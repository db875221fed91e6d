import type { Command } from '../command.js';
import { aclCommands } from './acls.js';
import { addressPoolCommands } from './address-pools.js';
import { certificateCommands } from './certificates.js';
import { completionCommand } from './completion.js';
import { DECLARATIVE_COMMANDS } from './declarative.js';
import { healthCommand } from './health.js';
import { listenerCommands } from './listeners.js';
import { loadBalancerCommands } from './load-balancers.js';
import { nodeCommands } from './nodes.js';
import { profileCommands } from './profiles.js';
import { ruleCommands } from './rules.js';
import { serverGroupCommands } from './server-groups.js';
import { serverCommands } from './servers.js';
import { tenantCommands, tokenCommands } from './tenants.js';

/**
 * Every command of slb, in the order `slb --help` shows them. Help, completion and the argument parser are
 * generated from it: a command added here is complete. Keep heavy imports inside `run` (startup time).
 */
export const COMMANDS: Command[] = [
  ...DECLARATIVE_COMMANDS,
  ...loadBalancerCommands,
  ...listenerCommands,
  ...serverGroupCommands,
  ...serverCommands,
  ...ruleCommands,
  ...certificateCommands,
  ...aclCommands,
  healthCommand,
  ...nodeCommands,
  ...tenantCommands,
  ...tokenCommands,
  ...addressPoolCommands,
  ...profileCommands,
  completionCommand(() => COMMANDS),
];
