import { Type } from '@sinclair/typebox';

/** Environment of a node in control-channel mode (no `--config`); spread into each node's own Env schema. */
export const ChannelEnvProperties = {
  // The controller to dial: one base URL, or its API replicas' separated by commas (dialed in order, moving
  // on to the next when one dies; see api-urls.ts); the one-time join token from POST /v1/nodes (exchanged for the node's own
  // credential, kept in SLB_STATE_DIR); the legacy shared token, only for fleets migrating off it.
  SLB_API_URL: Type.String({ pattern: '^https?://', default: 'http://127.0.0.1:8080' }),
  SLB_NODE_JOIN_TOKEN: Type.Optional(Type.String({ minLength: 16, maxLength: 200 })),
  SLB_NODE_TOKEN: Type.Optional(Type.String({ minLength: 16 })),
  // This node's identity in the fleet, the address its listeners bind and clients reach, and its weight.
  SLB_NODE_ID: Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$' })),
  SLB_NODE_ADDRESS: Type.String({ minLength: 2, default: '127.0.0.1' }),
  SLB_NODE_CAPACITY: Type.Integer({ minimum: 0, maximum: 1000, default: 100 }),
  // Last-known-good snapshot, served on restart while the controller is unreachable.
  SLB_STATE_DIR: Type.Optional(Type.String({ minLength: 1 })),
};

/**
 * Why a node cannot start in the mode it was asked for, or null. `hasCredential`: a credential is saved in
 * its state dir (from an earlier enrollment).
 */
export function channelModeProblem(
  configPath: string | undefined,
  env: { SLB_NODE_TOKEN?: string; SLB_NODE_JOIN_TOKEN?: string },
  hasCredential = false,
): string | null {
  if (
    configPath === undefined &&
    env.SLB_NODE_JOIN_TOKEN === undefined &&
    env.SLB_NODE_TOKEN === undefined &&
    !hasCredential
  ) {
    return 'SLB_NODE_JOIN_TOKEN is required to join the control plane (a join token from POST /v1/nodes; or a credential saved in SLB_STATE_DIR, or run with --config <file>)';
  }
  return null;
}
