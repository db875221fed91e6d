import { Type } from '@sinclair/typebox';

/** Environment of a node in control-channel mode (no `--config`); spread into each node's own Env schema. */
export const ChannelEnvProperties = {
  // The controller to dial and the shared secret to present.
  SLB_API_URL: Type.String({ pattern: '^https?://', default: 'http://127.0.0.1:8080' }),
  SLB_NODE_TOKEN: Type.Optional(Type.String({ minLength: 16 })),
  // This node's identity in the fleet, the address its listeners bind and clients reach, and its weight.
  SLB_NODE_ID: Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$' })),
  SLB_NODE_ADDRESS: Type.String({ minLength: 2, default: '127.0.0.1' }),
  SLB_NODE_CAPACITY: Type.Integer({ minimum: 0, maximum: 1000, default: 100 }),
  // Last-known-good snapshot, served on restart while the controller is unreachable.
  SLB_STATE_DIR: Type.Optional(Type.String({ minLength: 1 })),
};

/** Why a node cannot start in the mode it was asked for, or null. */
export function channelModeProblem(configPath: string | undefined, env: { SLB_NODE_TOKEN?: string }): string | null {
  if (configPath === undefined && env.SLB_NODE_TOKEN === undefined) {
    return 'SLB_NODE_TOKEN is required to join the control plane (or run with --config <file>)';
  }
  return null;
}
