import net from 'node:net';
import type { ProbeOptions, ProbeResult } from './result.js';
import { describeError, runProbe } from './result.js';
import { resetSocket } from './socket-close.js';

/** Where a TCP probe connects. */
export interface TcpProbeTarget {
  /** Backend address (IPv4, IPv6 or a host name). */
  address: string;
  /** Check port. */
  port: number;
}

/**
 * TCP connect check: success when the three-way handshake completes within the deadline. The connection is
 * then reset, never half-closed, so no half-open socket or TIME_WAIT entry is left on either side.
 */
export function probeTcp(target: TcpProbeTarget, options: ProbeOptions): Promise<ProbeResult> {
  return runProbe(options, (control) => {
    const socket = net.connect({ host: target.address, port: target.port });
    control.onSettle(() => resetSocket(socket));
    socket.once('connect', () => control.succeed());
    socket.once('error', (err) => control.fail(describeError(err)));
    socket.once('close', () => control.fail('connection closed'));
  });
}
