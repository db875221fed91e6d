// Types of scripts/topology.mjs, for the TypeScript that imports it (apps/api/test/compose.test.ts).

export declare const L4_ADDRESSES: string[];
export declare const L7_ADDRESSES: string[];
export declare const HEALTH_WORKERS: number;
export declare const NODE_PROCESS_ARGS: string[];

export interface LocalCloudConfig {
  root: string;
  dataDir: string;
  apiHost: string;
  apiPort: number;
  dnsPort: number;
  redisUrl: string;
  adminToken: string;
  nodeToken: string;
  /** Optional isolation knobs (tests running a local cloud beside others); unset means the defaults. */
  l4Addresses?: string[];
  l7Addresses?: string[];
  metricsPortBase?: number;
  healthQueue?: string;
  healthKeyPrefix?: string;
  syncPrefix?: string;
  addressPools?: string | string[];
  /** The API on PostgreSQL (SLB_DATABASE_URL). */
  databaseUrl?: string;
  /** A second API replica (`api-2`) on that database, on these ports; listed for every node and worker. */
  replica?: { port: number; dnsPort: number };
}

export interface LocalCloudService {
  name: string;
  kind: 'api' | 'health-worker' | 'l4-node' | 'l7-node';
  /** Node.js flags before the script (NODE_PROCESS_ARGS for the forwarding nodes). */
  args?: string[];
  script: string;
  env: Record<string, string>;
}

export declare function localCloudServices(c: LocalCloudConfig): LocalCloudService[];
