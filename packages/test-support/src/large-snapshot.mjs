// A fleet-sized L4 node snapshot without a control plane: what the hub would send a node hosting `listeners`
// listeners of `backends` servers each, for tests and benches of a node's full apply.

const id = (prefix, n) => `${prefix}-${n.toString(36).padStart(20, '0')}`;

/**
 * One TCP or UDP listener (every third is UDP) on `address`:`port` with `backends` servers nobody serves.
 * `group` listeners in a row share their servers, as the listeners of one server group do (default 1).
 * `sessionSync` is the listener's switch (default false).
 */
export function bulkListener(n, { address, port, backends, group = 1, sessionSync = false }) {
  const g = Math.floor(n / group);
  return {
    id: id('lsn', n),
    loadBalancerId: id('lb', Math.floor(n / 10)),
    tenantId: id('tnt', 1),
    protocol: n % 3 === 2 ? 'udp' : 'tcp',
    port,
    bindAddresses: [address],
    scheduler: 'wrr',
    persistenceTimeout: 0,
    proxyProtocol: 'off',
    connectionDrainTimeout: 0,
    idleTimeout: 60,
    sessionSync,
    backends: Array.from({ length: backends }, (_, s) => ({
      serverId: id('srv', g * backends + s),
      address: `127.0.${Math.floor(s / 200)}.${20 + (s % 200)}`,
      port: 40000 + (g % 1000),
      weight: 100,
      healthy: true,
    })),
  };
}

/** A node snapshot of `listeners` bulk listeners from `portBase` on, after `first` (listeners kept as given). */
export function largeL4Snapshot({ version, listeners, backends, address, portBase, first = [], group, sessionSync }) {
  return {
    version,
    generatedAt: new Date().toISOString(),
    listeners: [
      ...first,
      ...Array.from({ length: listeners }, (_, n) =>
        bulkListener(n, { address, port: portBase + n, backends, group, sessionSync }),
      ),
    ],
    l7Nodes: [],
  };
}
