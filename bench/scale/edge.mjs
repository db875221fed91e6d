/** Edge probes: a listener port another LB already uses, and one listener too many. */
import { allLbs, call } from './api-client.mjs';
import { LBS, LISTENERS, log, PORT_BASE } from './config.mjs';
import { servers } from './create.mjs';
import { waitConverged } from './fleet.mjs';

export async function edgeProbes(results) {
  try {
    const lb0 = (await allLbs()).find((lb) => lb.name === 'scale-0');
    const dup = await call('POST', '/v1/load-balancers', { name: 'scale-dup-port' });
    const dupSg = await call('POST', `/v1/load-balancers/${dup.id}/server-groups`, {
      name: 'g',
      servers: servers(0, 0, 1),
    });
    // LB scale-0's first port on another LB. Each LB has a VIP of its own (the API's default address pools),
    // so the API takes it (201) and scale-0 stays active; with SLB_ADDRESS_POOLS='' the LBs share their nodes'
    // addresses and the API refuses it (409).
    const refused = await call('POST', `/v1/load-balancers/${dup.id}/listeners`, {
      protocol: 'tcp',
      port: PORT_BASE,
      serverGroupId: dupSg.id,
      healthCheck: { enabled: false },
    }).then(
      () => 'created (201)',
      (err) => (/: 409 /.test(String(err)) ? 'refused (409)' : `failed: ${String(err).slice(0, 120)}`),
    );
    const lb0After = await call('GET', `/v1/load-balancers/${lb0.id}`);
    results.edge.duplicatePort = { refused, lb0Status: lb0After.status };
    log(`  duplicate port: listener ${refused}, scale-0 ${lb0After.status}`);
    await call('DELETE', `/v1/load-balancers/${dup.id}`);
    await waitConverged('after removing the duplicate-port LB', 120_000);

    if (LBS * LISTENERS >= 10_000) {
      const over = await call('POST', '/v1/load-balancers', { name: 'scale-over-limit' });
      const overSg = await call('POST', `/v1/load-balancers/${over.id}/server-groups`, {
        name: 'g',
        servers: servers(0, 0, 1),
      });
      // One listener past what a node runs: the API refuses it (409) rather than have the nodes refuse
      // the whole config.
      const refused = await call('POST', `/v1/load-balancers/${over.id}/listeners`, {
        protocol: 'tcp',
        port: PORT_BASE + LBS * LISTENERS,
        serverGroupId: overSg.id,
        healthCheck: { enabled: false },
      }).then(
        () => 'created (201)',
        (err) => (/: 409 /.test(String(err)) ? 'refused (409)' : `failed: ${String(err).slice(0, 120)}`),
      );
      await call('DELETE', `/v1/load-balancers/${over.id}`);
      results.edge.overLimit = { refused };
      log(`  one listener over 10,000: ${refused}`);
    }
  } catch (err) {
    results.edge.error = err instanceof Error ? err.message : String(err);
    log(`  edge probes: ${results.edge.error}`);
  }
}
