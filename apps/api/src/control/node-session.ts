import type { HelloMessage, ListenerFailure } from '@slb/model';
import type WebSocket from 'ws';
import { FailureRound } from './failure-round.js';
import type { NodeIdentity } from './node-credentials.js';
import type { VipNode } from './vip-serving.js';

/** One node's connection as the hub tracks it: what it was sent, what it acked, what fails there. */
export interface Session {
  ws: WebSocket;
  nodeId: string;
  kind: 'l4' | 'l7';
  address: string;
  /** The version last sent, and each listener as sent (serialised before per-node fields), for deltas. */
  sentVersion: number | null;
  /** What the first snapshot (or a delta with a new deny set) carried besides listeners, as JSON (refreshShared). */
  sentShared: string | null;
  /** The node keeps the epoch its snapshots carry (`appliedEpoch` in its hello): it can resume a session. */
  resumes: boolean;
  /** The node takes a changed deny set in a delta (`denyDeltas` in its hello); else it is sent a snapshot. */
  denyDeltas: boolean;
  /** (A node that resumes) each listener's hash as sent (see config-digest.ts), and their XOR. */
  sentHashes: Map<string, bigint>;
  sentXor: bigint;
  /**
   * The version and digest the node's hello said it holds, until its first config: sent an empty delta instead
   * when that is exactly what it would be sent (ConfigDelivery), whichever process sent it before.
   */
  claimed: { version: number; digest: string } | null;
  /**
   * Carried on from the node's previous session (resumeFrom): its next config is a diff of the whole fleet
   * (what changed while it was away), sent even when empty.
   */
  resumed: boolean;
  sentJson: Map<string, string>;
  sentL7Nodes: string | null;
  /** (L7) The L4 node addresses last sent (`l4Nodes`, the peers its PROXY ports accept), as JSON. */
  sentL4Nodes: string | null;
  /** Listener ids sent per LB, and (L4) the LB holding each port on this node: enough to resend one LB alone. */
  sentByLb: Map<string, string[]>;
  portOwner: Map<string, string>;
  /** (L4) The port keys each LB holds in portOwner, so one LB's can be let go without a pass over all. */
  portsByLb: Map<string, string[]>;
  /** Per sent version: the LB config versions it carries (all, or the changed ones), for convergence once acked. */
  lbVersionsSent: Map<number, LbVersions>;
  ackedLbVersions: Map<string, number>;
  /** Listeners the node last reported it could not build or bind (it retries binds), and their LBs. */
  failures: ListenerFailure[];
  /** Failing listeners besides `failures` that the node's last report had no room to name. */
  failuresOmitted: number;
  /** (A node that says `rotatesFailures`) its failures gathered over its reports; null: each report is whole. */
  failureRound: FailureRound | null;
  failedLbs: Set<string>;
  /** The acked version whose failed listeners the node's lastError names (null: it names none). */
  failuresInLastError: number | null;
  /** The node's runtime can share a VIP:port with its peers (SO_REUSEPORT): it may serve active-active. */
  reusePort: boolean;
  /** It reads L4 listeners that name a backend set (WireNodeSnapshot): it is sent each group's backends once. */
  backendSets: boolean;
  /** The addresses it said at hello it serves listeners on (see chooseVipBinders). */
  boundVips: ReadonlySet<string>;
  lastSeen: number;
  /**
   * The config version the node last said (in a heartbeat) it is applying, until its ack, nack or a heartbeat
   * without it: the node may then be silent longer (NodeLiveness) while it parses a fleet-sized config.
   */
  applying: number | null;
}

/** LB config versions a config carries: every LB on the node (`full`), or only those a delta changed. */
export interface LbVersions {
  full: boolean;
  versions: Map<string, number>;
}

/**
 * A session that has been sent nothing yet. hello.appliedVersion is not followed: versions start from the
 * clock at each controller start, so any version really issued is below ours, and following a claim (as
 * this once did) let one hello of 2^53-1 push every later version past the channel schema, and every node
 * refused every config from then on.
 */
export function newSession(ws: WebSocket, who: NodeIdentity, hello: HelloMessage, now: number): Session {
  return {
    ws,
    nodeId: who.nodeId,
    kind: who.kind,
    address: who.address,
    sentVersion: null,
    sentShared: null,
    resumes: hello.appliedEpoch !== undefined,
    denyDeltas: hello.denyDeltas === true,
    sentHashes: new Map(),
    sentXor: 0n,
    claimed:
      hello.appliedEpoch !== undefined && hello.appliedDigest
        ? { version: hello.appliedVersion, digest: hello.appliedDigest }
        : null,
    resumed: false,
    sentJson: new Map(),
    sentL7Nodes: null,
    sentL4Nodes: null,
    sentByLb: new Map(),
    portOwner: new Map(),
    portsByLb: new Map(),
    lbVersionsSent: new Map(),
    ackedLbVersions: new Map(),
    failures: [],
    failuresOmitted: 0,
    failureRound: hello.rotatesFailures === true ? new FailureRound() : null,
    failedLbs: new Set(),
    failuresInLastError: null,
    reusePort: hello.reusePort === true,
    backendSets: hello.backendSets === true,
    boundVips: new Set(hello.boundVips ?? []),
    lastSeen: now,
    applying: null,
  };
}

/**
 * The node reconnected holding exactly what `previous` was sent last: its hello names this process's epoch and
 * that version. It reported no failing listener (a resume restates none), and the first snapshot's other
 * fields are unchanged, or it takes a changed deny set in a delta. Then nothing but the difference travels.
 */
export function resumable(previous: Session, hello: HelloMessage, epoch: string, sharedJson: string): boolean {
  return (
    hello.appliedEpoch === epoch &&
    previous.sentVersion !== null &&
    hello.appliedVersion === previous.sentVersion &&
    (hello.denyDeltas === true || previous.sentShared === sharedJson) &&
    previous.failures.length === 0 &&
    previous.failuresOmitted === 0
  );
}

/** Carries a resumable session on: the node has applied everything `previous` sent (its hello says so). */
export function resumeFrom(session: Session, previous: Session): void {
  const version = previous.sentVersion!;
  ackUpTo(previous, version);
  session.sentVersion = version;
  session.sentShared = previous.sentShared;
  session.sentJson = previous.sentJson;
  session.sentHashes = previous.sentHashes;
  session.sentXor = previous.sentXor;
  session.claimed = null;
  session.sentL7Nodes = previous.sentL7Nodes;
  session.sentL4Nodes = previous.sentL4Nodes;
  session.sentByLb = previous.sentByLb;
  session.portOwner = previous.portOwner;
  session.portsByLb = previous.portsByLb;
  session.ackedLbVersions = previous.ackedLbVersions;
  session.resumed = true;
}

/** The node's next config goes out as a full snapshot; versions in flight are still acked as before. */
export function resendSnapshot(session: Session): void {
  session.sentVersion = null;
  session.claimed = null;
  session.sentJson = new Map();
  session.sentHashes = new Map();
  session.sentByLb = new Map();
}

/** The node did not take a config: it keeps its last good one, and gets everything anew on the next change. */
export function forgetSent(session: Session): void {
  session.failuresInLastError = null;
  session.sentVersion = null;
  session.claimed = null;
  session.sentJson = new Map();
  session.sentHashes = new Map();
  session.sentL7Nodes = null;
  session.sentL4Nodes = null;
  session.sentByLb = new Map();
  session.portOwner = new Map();
  session.portsByLb = new Map();
}

/**
 * The node applied every version up to this one, in order: their LB versions are now its own. Returns the LBs
 * whose applied version that may move ('all' after a whole config); null for an ack of something not sent (or
 * already superseded).
 */
export function ackUpTo(session: Session, version: number): LbsTouched | null {
  if (!session.lbVersionsSent.has(version)) return null;
  const done = [...session.lbVersionsSent.keys()].filter((v) => v <= version).sort((a, b) => a - b);
  const touched = new Set<string>();
  let all = false;
  for (const v of done) {
    const update = session.lbVersionsSent.get(v)!;
    applyLbVersions(session, update);
    if (update.full) all = true;
    else for (const id of update.versions.keys()) touched.add(id);
    session.lbVersionsSent.delete(v);
  }
  return all ? 'all' : touched;
}

/** The LBs something changed for ('all': any of them). */
export type LbsTouched = ReadonlySet<string> | 'all';

/**
 * Nothing to send the node for these LB versions. Its config, once it acks what is in flight, is the current
 * one: the newest pending version (or the node's current one) carries them.
 */
export function alreadyCarried(session: Session, lbVersions: LbVersions): void {
  const pending = [...session.lbVersionsSent.keys()];
  if (pending.length === 0) {
    applyLbVersions(session, lbVersions);
    return;
  }
  const newest = Math.max(...pending);
  const entry = session.lbVersionsSent.get(newest)!;
  if (lbVersions.full) session.lbVersionsSent.set(newest, lbVersions);
  else for (const [id, v] of lbVersions.versions) entry.versions.set(id, v);
}

function applyLbVersions(session: Session, update: LbVersions): void {
  if (update.full) session.ackedLbVersions = update.versions;
  else for (const [id, v] of update.versions) session.ackedLbVersions.set(id, v);
}

/** A node's lastError for listeners it could not build or bind with `version` (null: none). */
export function failedListenersError(version: number, failed: ListenerFailure[], omitted = 0): string | null {
  if (failed.length === 0) return null;
  const named = failed
    .slice(0, 5)
    .map((f) => `${f.listenerId}: ${f.reason}`)
    .join('; ');
  const unnamed = omitted > 0 ? ` (${omitted} not named: the node's report had no room for them)` : '';
  return `version ${version}: ${failed.length + omitted} listener(s) not applied${unnamed}: ${named}`.slice(0, 2000);
}

/** The LBs a node's failed listeners belong to, from what it was sent. */
export function failedLbsOf(sentByLb: Map<string, string[]>, failed: ListenerFailure[]): Set<string> {
  const lbs = new Set<string>();
  if (failed.length === 0) return lbs;
  const ids = new Set(failed.map((f) => f.listenerId));
  for (const [lbId, listenerIds] of sentByLb) if (listenerIds.some((id) => ids.has(id))) lbs.add(lbId);
  return lbs;
}

/** The failing listeners of this LB the node names. */
export function failuresOf(session: Session, lbId: string): ListenerFailure[] {
  if (session.failures.length === 0) return [];
  const listenerIds = new Set(session.sentByLb.get(lbId) ?? []);
  return session.failures.filter((x) => listenerIds.has(x.listenerId));
}

/** An L4 node as the choice of VIP binders sees it: what it can share, whether it can be told. */
export function vipNodeOf(s: Session): VipNode {
  return {
    id: s.nodeId,
    reusePort: s.reusePort,
    channelOpen: s.ws.readyState === s.ws.OPEN,
    bound: s.boundVips,
    serves: (lbId) => s.ackedLbVersions.has(lbId) && !s.failedLbs.has(lbId),
  };
}
