import dgram from 'node:dgram';
import net from 'node:net';
import type { ProbeOptions, ProbeResult } from './result.js';
import { describeError, runProbe } from './result.js';

/** What a UDP probe sends and expects. */
export interface UdpProbeTarget {
  /** Backend address (IPv4, IPv6 or a host name, resolved as IPv4). */
  address: string;
  /** Check port. */
  port: number;
  /** Payload sent (UTF-8). Default: empty datagram. */
  request?: string;
  /** Healthy when a reply contains this (UTF-8); when empty or unset any reply counts. */
  expect?: string;
}

/**
 * UDP request/response check. The socket is connected, so the kernel reports an ICMP port-unreachable as
 * ECONNREFUSED: that fails the probe at once instead of waiting out the deadline. Replies that do not
 * contain `expect` are ignored (a stray datagram is not a verdict); the deadline then decides.
 */
export function probeUdp(target: UdpProbeTarget, options: ProbeOptions): Promise<ProbeResult> {
  const request = Buffer.from(target.request ?? '', 'utf8');
  const expect = target.expect ? Buffer.from(target.expect, 'utf8') : undefined;
  return runProbe(options, (control) => {
    const socket = dgram.createSocket(net.isIPv6(target.address) ? 'udp6' : 'udp4');
    control.onSettle(() => {
      socket.on('error', () => {});
      socket.close();
    });
    socket.on('error', (err) => control.fail(describeError(err)));
    socket.on('message', (message) => {
      if (expect === undefined || message.includes(expect)) control.succeed();
    });
    // Node hands a failed lookup to this callback (not to 'error'), typed or not.
    socket.connect(target.port, target.address, (err?: Error) => {
      if (err) return control.fail(describeError(err));
      socket.send(request, (sendError) => {
        if (sendError) control.fail(describeError(sendError));
      });
    });
  });
}
