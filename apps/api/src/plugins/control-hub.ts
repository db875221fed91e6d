import fp from 'fastify-plugin';
import { ControlHub, FLEET_RESCAN_MS } from '../control/hub.js';
import { RuntimeShare } from '../control/runtime-share.js';

declare module 'fastify' {
  interface FastifyInstance {
    controlHub: ControlHub;
    /** Replicas (PostgreSQL and Redis): the LBs' runtime as every replica's nodes tell it; null otherwise. */
    runtimeShare: RuntimeShare | null;
  }
}

export interface ControlHubOptions {
  /** A node's joins and leaves are recorded at most once per this many ms (see ServingLog). Default 30,000. */
  nodeEventIntervalMs?: number;
  /** On PostgreSQL, how often the whole fleet is read again for writes of other replicas missed. Default 30,000. */
  rescanMs?: number;
}

/** The control hub: what the nodes serve, compiled from the database and pushed to them. */
export const controlHubPlugin = fp<ControlHubOptions>(
  async (app, options) => {
    const { data, events } = app;
    const box = app.secretBox;
    const hub = await ControlHub.start(data, app.log, Date.now(), {
      openKey: (stored) => box.open(stored),
      events,
      nodeEventIntervalMs: options.nodeEventIntervalMs,
      sharedFleet: data.dialect === 'postgres',
    });
    app.decorate('controlHub', hub);
    const signals = app.clusterSignals;
    if (signals) {
      // Another replica's write: its LB (or the fleet) is read again here, for the nodes connected to this one.
      signals.on('config-changed', (lbId) => hub.changed(lbId === '' ? undefined : lbId));
      // A node deleted, or its credential replaced, on another replica: its channel here closes too.
      hub.onDisconnect = (nodeId, reason) => signals.send('node-revoked', JSON.stringify({ nodeId, reason }));
      signals.on('node-revoked', (payload) => {
        const { nodeId, reason } = JSON.parse(payload) as { nodeId?: unknown; reason?: unknown };
        if (typeof nodeId === 'string' && typeof reason === 'string') hub.disconnect(nodeId, reason, false);
      });
    }
    // Replicas (PostgreSQL): a signal lost while Redis was away is made good by reading the whole fleet again now
    // and then (configVersions compared; only what changed is compiled and sent).
    if (app.data.dialect === 'postgres') hub.rescanEvery(options.rescanMs ?? FLEET_RESCAN_MS);
    const holderId = app.duties.lease?.holderId;
    const share =
      app.data.dialect === 'postgres' && app.redis && holderId !== undefined
        ? new RuntimeShare(app.redis, app.namespace.clusterId, holderId, hub, app.log)
        : null;
    app.decorate('runtimeShare', share);
    app.addHook('onReady', async () => share?.start());
    // Whatever the hub still has running (a recompile, a node's row) ends before the database closes.
    app.addHook('onClose', async () => {
      hub.close();
      await share?.close();
      await hub.settled();
    });
    // Every snapshot carries the deployment's session-sync prefix: nodes of two deployments on one Redis
    // never share keys.
    hub.setSessionSyncPrefix(app.namespace.sessionSyncPrefix);
  },
  { name: 'control-hub', dependencies: ['database', 'event-store', 'cluster-duties', 'redis'] },
);
