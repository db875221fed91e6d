// The local cloud's processes: one definition shared by `npm run local-cloud` and the docker-compose test,
// so the containers and the processes cannot drift apart.

/** Loopback addresses of the forwarding nodes (Linux routes all of 127.0.0.0/8 to lo). */
export const L4_ADDRESSES = ['127.0.0.11', '127.0.0.12'];
export const L7_ADDRESSES = ['127.0.0.21', '127.0.0.22'];
export const HEALTH_WORKERS = 2;
/**
 * Node.js flags of the forwarding nodes, before their script (the local cloud, docker-compose and the
 * benches start them so). Node 24 sizes V8's young generation from the machine's memory: 64 MiB
 * semi-spaces on 24 GiB, and an L4 node that applied 10,000 listeners stayed at 324-376 MiB resident with
 * 140-170 MiB of heap in use (bench/node-join.mjs RESTART=1). 16 MiB, Node 20's size, kept it at 238-260 MiB
 * with the same apply time; forwarding moved within the benches' noise (bench/README.md).
 */
export const NODE_PROCESS_ARGS = ['--max-semi-space-size=16'];
/** Where the local cloud's tenants may put backends: loopback, then the private ranges of the default. */
export const LOCAL_BACKEND_NETWORKS = [
  '127.0.0.0/8',
  '::1/128',
  '10.0.0.0/8',
  '172.16.0.0/12',
  '192.168.0.0/16',
  '100.64.0.0/10',
  'fc00::/7',
];

/**
 * @param {{ root: string, dataDir: string, apiHost: string, apiPort: number, dnsPort: number,
 *           redisUrl: string, adminToken: string,
 *           l4Addresses?: string[], l7Addresses?: string[], metricsPortBase?: number,
 *           healthQueue?: string, healthKeyPrefix?: string, syncPrefix?: string,
 *           addressPools?: string | string[], databaseUrl?: string,
 *           replica?: { port: number, dnsPort: number } }} c
 * `databaseUrl`: the API on PostgreSQL; with `replica`, a second API (`api-2`) on it, listed for every node and
 * worker after the first (`npm run local-cloud -- --ha`).
 * @returns {{ name: string, kind: 'api'|'health-worker'|'l4-node'|'l7-node', args?: string[], script: string, env: Record<string,string> }[]}
 */
export function localCloudServices(c) {
  const apiUrl = [c.apiPort, ...(c.replica ? [c.replica.port] : [])].map((p) => `http://${c.apiHost}:${p}`).join(',');
  const metricsBase = c.metricsPortBase ?? 9110;
  // Optional isolation knobs (tests run a local cloud beside others on one machine); unset means the defaults.
  const health = {
    ...(c.healthQueue ? { SLB_HEALTH_QUEUE: c.healthQueue } : {}),
    ...(c.healthKeyPrefix ? { SLB_HEALTH_KEY_PREFIX: c.healthKeyPrefix } : {}),
  };
  const sync = c.syncPrefix ? { SLB_SESSION_SYNC_PREFIX: c.syncPrefix } : {};
  // The pools the API hands VIPs out of (SLB_ADDRESS_POOLS); unset: the API's default.
  const pools = c.addressPools ? { SLB_ADDRESS_POOLS: [c.addressPools].flat().join(',') } : {};
  const services = [
    {
      name: 'api',
      kind: 'api',
      script: `${c.root}/apps/api/dist/main.js`,
      env: {
        HOST: c.apiHost,
        PORT: String(c.apiPort),
        SLB_DB_PATH: `${c.dataDir}/slb.db`,
        REDIS_URL: c.redisUrl,
        SLB_ADMIN_TOKEN: c.adminToken,
        // Encrypts TLS private keys at rest in the database (the local cloud generates it).
        SLB_SECRET_KEY_FILE: `${c.dataDir}/secret-key`,
        SLB_DNS_PORT: String(c.dnsPort),
        // Backends on loopback, as the local cloud's demo and test backends are (production: private ranges).
        SLB_DEFAULT_BACKEND_NETWORKS: LOCAL_BACKEND_NETWORKS.join(','),
        // The VIP pools LBs get their addresses from (unset: the API's default, 127.1.0.0/16).
        ...pools,
        ...health,
        ...(c.databaseUrl ? { SLB_DATABASE_URL: c.databaseUrl } : {}),
      },
    },
  ];
  if (c.replica) {
    const { env } = services[0];
    services.push({
      name: 'api-2',
      kind: 'api',
      script: services[0].script,
      env: { ...env, PORT: String(c.replica.port), SLB_DNS_PORT: String(c.replica.dnsPort) },
    });
  }
  for (let i = 1; i <= HEALTH_WORKERS; i++) {
    services.push({
      name: `health-worker-${i}`,
      kind: 'health-worker',
      script: `${c.root}/apps/health-worker/dist/main.js`,
      // The worker asks this API for the deployment's queue and key prefix (unless `health` sets them).
      env: { REDIS_URL: c.redisUrl, SLB_API_URL: apiUrl, SLB_METRICS_PORT: String(metricsBase + 20 + i), ...health },
    });
  }
  const node = (kind, i, address, portBase) => ({
    name: `${kind}-${i}`,
    kind,
    address,
    args: NODE_PROCESS_ARGS,
    script: `${c.root}/apps/${kind}/dist/main.js`,
    env: {
      SLB_API_URL: apiUrl,
      // No token here: each node enrolls with its own join token (scripts/enroll-nodes.mjs), then keeps its
      // credential in SLB_STATE_DIR.
      SLB_NODE_ID: `${kind}-${i}`,
      SLB_NODE_ADDRESS: address,
      SLB_STATE_DIR: `${c.dataDir}/node-${kind}-${i}`,
      SLB_METRICS_PORT: String(portBase + i),
      REDIS_URL: c.redisUrl,
      ...sync,
    },
  });
  for (const [i, address] of (c.l4Addresses ?? L4_ADDRESSES).entries()) {
    services.push(node('l4-node', i + 1, address, metricsBase));
  }
  for (const [i, address] of (c.l7Addresses ?? L7_ADDRESSES).entries()) {
    services.push(node('l7-node', i + 1, address, metricsBase + 10));
  }
  // The metrics ports share 127.0.0.1 with the backends: the API cannot see them, so they are listed for it;
  // the health workers get them and the API's own endpoints (they deny their Redis by themselves).
  const metricsDeny = services.filter((s) => s.env.SLB_METRICS_PORT).map((s) => `127.0.0.1:${s.env.SLB_METRICS_PORT}`);
  const apis = services.filter((s) => s.kind === 'api');
  // Each API denies the others' endpoints (its own it finds by itself).
  for (const a of apis) {
    const others = apis
      .filter((o) => o !== a)
      .flatMap((o) => [`${c.apiHost}:${o.env.PORT}`, `${c.apiHost}:${o.env.SLB_DNS_PORT}`]);
    a.env.SLB_BACKEND_DENY = [...others, ...metricsDeny].join(',');
  }
  const apiEndpoints = apis.flatMap((a) => [`${c.apiHost}:${a.env.PORT}`, `${c.apiHost}:${a.env.SLB_DNS_PORT}`]);
  const workerDeny = [...apiEndpoints, ...metricsDeny].join(',');
  for (const s of services) if (s.kind === 'health-worker') s.env.SLB_BACKEND_DENY = workerDeny;
  return services;
}
