import type { TSchema } from '@sinclair/typebox';
import type { ListenerFailure, NodeLoadReport, TrafficReport } from '@slb/model';
import type { Registry } from 'prom-client';

// What a node hands the control channel client and what the client hands back: the client's contract with
// the two nodes, apart from the client itself (control-channel.ts).

export interface ChannelLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

/** The part of a node's snapshot the channel reads; the rest is the node's. */
export interface VersionedSnapshot {
  version: number;
  generatedAt: string;
  /** The controller process that numbered the config (see SnapshotEpoch). */
  epoch?: string;
  /** The controller's hash of the config (see SnapshotDigest). */
  digest?: string;
  listeners: { id: string }[];
}

export interface ControlChannelOptions<S extends VersionedSnapshot> {
  /**
   * The control plane's base URLs, e.g. [http://127.0.0.1:8080] (SLB_API_URL, see splitApiUrls): its API
   * replicas, dialed in order; the channel stays on the one that answers and moves to the next when it dies.
   */
  apiUrls: readonly string[];
  /**
   * One-time join token (SLB_NODE_JOIN_TOKEN), exchanged at start for the node's own credential, kept in
   * `stateDir`. Later starts use the saved credential; a different join token is a rotation. Never logged.
   */
  joinToken?: string;
  /** The legacy shared token (SLB_NODE_TOKEN), for a fleet migrating to credentials; never logged. */
  token?: string;
  /** The id, kind and address announced when joining with the legacy token (a credential carries its own). */
  nodeId: string;
  kind: 'l4' | 'l7';
  address: string;
  /** 100 = a normal node. */
  capacity: number;
  /** Where the last applied snapshot is kept (SLB_STATE_DIR). */
  stateDir: string;
  /** The schema the saved snapshot is checked against at start (messages are checked against the channel schemas). */
  schema: TSchema;
  /**
   * Applies a validated snapshot. After a delta, `change` names what it touched (the upserted objects are
   * the ones in `snapshot.listeners`), so a node with thousands of listeners can look at those alone.
   * Returns the listeners it could not build (each keeps its last good config, if any; the rest are
   * applied), reported in the ack. Throws (with a reason) only for what is not a listener's, refusing all.
   */
  apply(snapshot: S, change?: SnapshotChange): Promise<AppliedListeners>;
  load(): NodeLoadReport;
  /**
   * The traffic summary of each heartbeat (a TrafficReporter's report()); absent: none sent. Called once
   * per heartbeat, so its cost is paid once a second.
   */
  traffic?(): TrafficReport;
  /**
   * The node's listener failures now (binds still being retried, configs it could not build), sent in every
   * heartbeat and used for the acks instead of what the applies returned, so the control plane sees a
   * failure heal or appear between two configs. Default: the failures the applies returned, in acks only.
   */
  currentFailures?(): readonly ListenerFailure[];
  /**
   * Whether this node can share a VIP:port with peer nodes on its host (SO_REUSEPORT; see
   * runtime-capabilities.ts), said in the hello. Default: not said (the hub takes that as no).
   */
  reusePort?: boolean;
  /**
   * The addresses the node serves listeners on now, said in each hello: a controller that restarted (or
   * lost this node for a while) then leaves an active-standby VIP on the node that binds it, instead of
   * handing it to whichever node said hello first and making the two fight over the port.
   */
  boundVips?(): readonly string[];
  /**
   * Called once the node knows the address the control plane knows it by (its credential's, else
   * `address`), before any snapshot is applied: the L4 node connects upstream from it.
   */
  identified?(address: string): void;
  logger: ChannelLogger;
  /**
   * Where `slb_control_plane_replica` (the position in `apiUrls` of the replica connected to, -1 while
   * disconnected) is registered. Default: not exported.
   */
  registry?: Registry;
  /**
   * The longest wait between two rounds of dials, ms. Default 1000: a restarted API is found within a second
   * of answering, and a dial of a dead one is a refused connect, cheap on both sides. A refusal of the node
   * itself (401) waits longer on its own.
   */
  maxReconnectDelayMs?: number;
  /**
   * On a later replica of `apiUrls`, how often the earlier ones are asked whether they are ready again, ms
   * (jittered ±50%); the node moves back once one has answered ready RETURN_AFTER_READY times in a row.
   * Default RETURN_PROBE_MS; 0: never moves back.
   */
  returnProbeMs?: number;
  /**
   * The first applied snapshot is saved at once, later ones at most once per this many ms (longer for a
   * snapshot that is slow to serialise, up to 10 s). Default 500.
   */
  saveIntervalMs?: number;
}

/** What a delta touched: its upserted listeners (as placed in the new snapshot) and removed ids. */
export interface SnapshotChange {
  upsert: readonly { id: string }[];
  remove: readonly string[];
  /** The L4 node's L7 pool changed too (every HTTP/HTTPS listener is affected). */
  l7NodesChanged: boolean;
}

/** What an apply returns: the listeners it could not build, or nothing when it built them all. */
// biome-ignore lint/suspicious/noConfusingVoidType: an apply that builds every listener returns nothing.
export type AppliedListeners = readonly ListenerFailure[] | undefined | void;
