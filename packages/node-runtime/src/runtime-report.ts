import { Gauge, type Registry } from 'prom-client';
import { detectRuntimeCapabilities, missingCapabilities, type RuntimeCapabilities } from './runtime-capabilities.js';

/** The slice of a pino logger the report writes to. */
export interface RuntimeLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/**
 * Detects what the runtime can do, logs it once (a warning naming each missing capability, so an operator
 * on Node 20 learns at start what it costs) and exports it as `slb_runtime_info{node_version, reuse_port} 1`,
 * so a fleet on mixed runtimes shows in one query. Resolves with the capabilities for the caller to act on.
 */
export async function reportRuntime(registry: Registry, logger: RuntimeLogger): Promise<RuntimeCapabilities> {
  const caps = await detectRuntimeCapabilities();
  new Gauge({
    name: 'slb_runtime_info',
    help: 'the Node.js runtime and whether it can share an address:port between processes (SO_REUSEPORT)',
    labelNames: ['node_version', 'reuse_port'] as const,
    registers: [registry],
    // An L7 worker fleet reports one runtime, not one per worker summed.
    aggregator: 'max',
  })
    .labels(caps.node, String(caps.reusePort))
    .set(1);
  const missing = missingCapabilities(caps);
  if (missing.length === 0) logger.info({ runtime: caps }, `runtime ${caps.node}: every capability present`);
  else {
    logger.warn(
      { runtime: caps, missing: missing.map((m) => m.name) },
      `runtime ${caps.node} lacks ${missing.map((m) => `${m.name} (${m.reason})`).join('; ')}`,
    );
  }
  return caps;
}
