import type { L7Listener } from '@slb/model';
import type { Logger } from 'pino';
import type { Metrics } from './metrics.js';
import type { Pools } from './pools.js';
import type { NodeAnswer } from './problem.js';
import type { RetryBudget } from './retry-budget.js';
import type { CompiledRule, RouteMatch } from './rules.js';
import type { Backend, ServerGroupRuntime } from './server-group.js';
import type { LearnedCookies } from './sticky.js';
import type { UpstreamPools } from './upstream-pool.js';

// The types every request path shares: the raw-socket fast path (fast-exchange.ts), node:http + undici
// (proxy.ts) and Upgrade (upgrade.ts). Types only, so each path and request-flow.ts import it and none of
// them imports another.

/** What a listener forwards with; replaced as a whole on reload, so a request sees one consistent config. */
export interface ListenerState {
  readonly config: L7Listener;
  readonly rules: readonly CompiledRule[];
  readonly groups: ReadonlyMap<string, ServerGroupRuntime>;
  readonly budget: RetryBudget;
  readonly learned: LearnedCookies;
}

/** The client as the node knows it: from the PROXY v2 header when one came, else the socket. */
export interface ClientInfo {
  readonly address: string;
  readonly port: number;
  /** The port the client connected to (PROXY destination port, or this node's port). */
  readonly frontendPort: number;
}

export interface ProxyDeps {
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly pools: Pools;
  /** Raw keep-alive sockets to backends, for the fast path. */
  readonly upstream: UpstreamPools;
  /** Backends tried per request, first attempt included. Default 3. */
  readonly maxAttempts: number;
  /** Connect timeout to a backend for connections made outside the pools (Upgrade), ms. Default 3000. */
  readonly connectTimeoutMs: number;
}

/** Where a request goes, decided from its Host and path before any backend is picked. */
export interface RoutedRequest {
  /** Normalized Host ('' when absent). */
  readonly host: string;
  /** The target's path, without the query string (which may carry tokens, so is never logged). */
  readonly path: string;
  /** The matching rule (or the listener's default group); null when none applies. */
  readonly route: RouteMatch | null;
  /** The route's server group; undefined when there is no route or the group is gone. */
  readonly group: ServerGroupRuntime | undefined;
}

/** The backend an attempt goes to; `stuck` when a sticky cookie chose it. */
export interface BackendChoice {
  readonly backend: Backend | null;
  readonly stuck: boolean;
}

/** How one attempt against one backend ended. */
export type Outcome =
  | { kind: 'done' }
  | { kind: 'connect-failed' }
  | { kind: 'reset-before-response'; bodyConsumed: boolean }
  | { kind: 'failed'; answer: NodeAnswer };

/** Per-request retry bookkeeping: whether this request holds a retry-budget slot (released at its end). */
export interface RetryState {
  retrySlot: boolean;
}

/** A finished request, as counted and written to the access log. */
export interface RequestRecord {
  readonly client: string;
  readonly method: string | undefined;
  readonly host: string;
  readonly path: string;
  readonly status: number;
  readonly backend: Backend | null;
  readonly ruleId: string | null;
  readonly attempts: number;
  /** performance.now() when the request arrived. */
  readonly started: number;
  readonly answer: NodeAnswer | null;
  readonly aborted: boolean;
  /** The Upgrade header of a protocol-upgrade request (WebSocket); absent for other requests. */
  readonly upgrade?: string | undefined;
}
