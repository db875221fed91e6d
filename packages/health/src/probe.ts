import { probeHttp } from './http.js';
import type { ProbeOptions, ProbeResult } from './result.js';
import type { HealthCheckSettings } from './settings.js';
import { probeTcp } from './tcp.js';
import { probeUdp } from './udp.js';

/** Options for {@link probe}; the deadline comes from the settings' `timeout`. */
export type CheckOptions = Omit<ProbeOptions, 'timeoutMs'>;

/** Runs the check the settings describe against one server address. Never rejects. */
export function probe(
  address: string,
  settings: HealthCheckSettings,
  options: CheckOptions = {},
): Promise<ProbeResult> {
  const probeOptions: ProbeOptions = { ...options, timeoutMs: settings.timeout * 1000 };
  const port = settings.port;
  switch (settings.type) {
    case 'tcp':
      return probeTcp({ address, port }, probeOptions);
    case 'http':
      return probeHttp(
        {
          address,
          port,
          method: settings.method,
          path: settings.path,
          ...(settings.domain !== null ? { domain: settings.domain } : {}),
          httpCodes: settings.httpCodes,
          https: settings.https,
        },
        probeOptions,
      );
    case 'udp':
      return probeUdp({ address, port, request: settings.udpRequest, expect: settings.udpExpect }, probeOptions);
  }
}
