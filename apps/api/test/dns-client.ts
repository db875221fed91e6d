import { createSocket } from 'node:dgram';
import dnsPacket, { type DecodedPacket } from 'dns-packet';

/** Sends one DNS message over UDP to 127.0.0.1:`port`; the reply, or null after `timeoutMs`. */
export function askUdp(port: number, payload: Buffer, timeoutMs: number): Promise<Buffer | null> {
  return new Promise((resolve) => {
    const socket = createSocket('udp4');
    const timer = setTimeout(() => {
      socket.close();
      resolve(null);
    }, timeoutMs);
    socket.on('message', (m) => {
      clearTimeout(timer);
      socket.close();
      resolve(m);
    });
    socket.send(payload, port, '127.0.0.1');
  });
}

/** A decoded DNS message with its response code by name ('NOERROR', 'NXDOMAIN', ...). */
export type DecodedReply = DecodedPacket & { rcode: string };

/** dns-packet's decode sets `rcode` from the flags, but @types/dns-packet leaves the field out. */
export const decodeReply = (message: Buffer): DecodedReply => dnsPacket.decode(message) as DecodedReply;
