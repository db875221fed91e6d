import fp from 'fastify-plugin';
import { DnsResponder } from '../dns/responder.js';
import { DEFAULT_DNS_ZONE } from '../services/load-balancers.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The port the DNS responder answers on once the app is ready; null when it has none. */
    dnsPort: number | null;
  }
}

export interface DnsOptions {
  /**
   * Address (SLB_HOST) and port (SLB_DNS_PORT; 0 picks one free for both) of the responder's UDP and TCP
   * sockets; absent: no responder.
   */
  listen?: { host: string; port: number };
  /** Zone of the LBs' names (`<lbId>.<zone>`, SLB_DNS_ZONE); default slb.internal. */
  zone?: string;
}

/**
 * Answers `<lbId>.<zone>` with the LB's VIP, bound while the app runs: from onReady (so before the HTTP
 * port listens, and a port in use stops the start like the HTTP port would) to onClose.
 */
export const dnsPlugin = fp<DnsOptions>(
  async (app, { listen, zone = DEFAULT_DNS_ZONE }) => {
    app.decorate('dnsPort', null);
    if (!listen) return;
    const responder = new DnsResponder(zone, (lbId) => app.services.loadBalancers.addressesOf(lbId), app.log);
    app.addHook('onReady', async () => {
      app.dnsPort = await responder.listen(listen.host, listen.port);
      app.log.info({ dnsPort: app.dnsPort, zone }, 'DNS responder listening');
    });
    app.addHook('onClose', async () => {
      responder.close();
      app.dnsPort = null;
    });
  },
  { name: 'dns', dependencies: ['services'] },
);
