// The configs the bench gives an l4-node or an l7-node in file mode (`--config`): one LB, backends on 127.0.0.1.

export function id(prefix, n) {
  return `${prefix}-${String(n).padStart(20, '0')}`;
}

/** L4 listeners as [n, protocol, listen port, upstream port]. */
export function l4Snapshot(listeners) {
  return {
    version: 1,
    generatedAt: new Date().toISOString(),
    l7Nodes: [],
    listeners: listeners.map(([n, protocol, listen, upstream]) => ({
      id: id('lsn', n),
      loadBalancerId: id('lb', 1),
      tenantId: id('tnt', 1),
      protocol,
      port: listen,
      bindAddresses: ['127.0.0.1'],
      scheduler: 'wrr',
      persistenceTimeout: 0,
      proxyProtocol: 'off',
      connectionDrainTimeout: 0,
      idleTimeout: 60,
      sessionSync: false,
      backends: [{ serverId: id('srv', 1), address: '127.0.0.1', port: upstream, weight: 100, healthy: true }],
    })),
  };
}

export function l7Snapshot(proxyPort, directPort, upstream) {
  const sg = id('sg', 1);
  return {
    version: 1,
    generatedAt: new Date().toISOString(),
    listeners: [
      {
        id: id('lsn', 1),
        loadBalancerId: id('lb', 1),
        tenantId: id('tnt', 1),
        protocol: 'http',
        port: proxyPort,
        directPort,
        scheduler: 'wrr',
        stickySession: null,
        xForwardedFor: true,
        idleTimeout: 60,
        requestTimeout: 60,
        certificates: [],
        defaultServerGroupId: sg,
        rules: [],
        serverGroups: [
          {
            id: sg,
            backends: [{ serverId: id('srv', 1), address: '127.0.0.1', port: upstream, weight: 100, healthy: true }],
          },
        ],
      },
    ],
  };
}
