import fp from 'fastify-plugin';
import { installChannelServer } from '../control/channel-server.js';
import { installEnrollRoute } from '../control/enroll-route.js';
import { installNamespaceRoute } from '../control/namespace-route.js';
import { UpgradeGuard, type UpgradeGuardOptions } from '../control/upgrade-guard.js';

export interface NodeFacingOptions {
  /** The legacy shared node token, accepted (and its nodes enrolled) only while migrating to per-node credentials. */
  nodeToken?: string;
  /** Limits on node connection attempts per source address (see UpgradeGuard); defaults apply when absent. */
  nodeConnectLimits?: UpgradeGuardOptions;
}

/** What nodes and health workers reach, outside /v1: the control channel, enrolment, the Redis names. */
export const nodeFacingPlugin = fp<NodeFacingOptions>(
  async (app, options) => {
    const hub = app.controlHub;
    const guard = new UpgradeGuard(app.log, options.nodeConnectLimits);
    installChannelServer(app, hub, { legacyToken: options.nodeToken, guard });
    installEnrollRoute(app, hub, guard);
    installNamespaceRoute(app, app.namespace);
  },
  { name: 'node-facing', dependencies: ['database', 'control-hub'] },
);
