import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { createServer, isIPv4, isIPv6, type Server, type Socket } from 'node:net';
import dnsPacket, { type Answer, type Packet } from 'dns-packet';
import { encodeReply, frameTcp } from './reply-size.js';

/** TTL of every answer: short, so clients follow the fleet within seconds of a node going away. */
export const DNS_TTL_SECONDS = 5;
const MAX_TCP_MESSAGE = 4096;

export interface DnsLogger {
  warn(obj: object, msg?: string): void;
}

/** The addresses of `lbId` (its VIP), or null when no such LB exists. */
export type LbAddressLookup = (lbId: string) => Promise<string[] | null> | string[] | null;

// dns-packet encodes the response code as the low 4 bits of `flags`.
const RCODE = { NOERROR: 0, FORMERR: 1, NXDOMAIN: 3, REFUSED: 5 } as const;
const withRcode = (reply: Packet, rcode: keyof typeof RCODE): Packet => ({
  ...reply,
  flags: (reply.flags ?? 0) | RCODE[rcode],
});

/** Builds the answer to one query: A/AAAA for `<lbId>.<zone>`, NXDOMAIN for unknown names in the zone. */
export async function answer(query: Packet, zone: string, lookup: LbAddressLookup): Promise<Packet> {
  const question = query.questions?.[0];
  const reply: Packet = {
    type: 'response',
    id: query.id ?? 0,
    flags: dnsPacket.AUTHORITATIVE_ANSWER | ((query.flags ?? 0) & dnsPacket.RECURSION_DESIRED),
    questions: query.questions ?? [],
    answers: [],
  };
  // No echo of the questions: a query naming hundreds by compression pointers would otherwise be answered
  // with all of them written out in full (a 1.7 KB query drew a 61 KB reply).
  if (!question || query.questions!.length !== 1) return withRcode({ ...reply, questions: [] }, 'FORMERR');
  const name = question.name.toLowerCase().replace(/\.$/, '');
  const suffix = `.${zone.toLowerCase()}`;
  if (!name.endsWith(suffix)) return withRcode(reply, 'REFUSED');
  const label = name.slice(0, -suffix.length);
  const addresses = /^lb-[0-9a-z]{20}$/.test(label) ? await lookup(label) : null;
  if (addresses === null) return withRcode(reply, 'NXDOMAIN');
  const qtype = question.type as string; // dns-packet names qtype 255 'ANY', which its types omit
  const answers: Answer[] = [];
  for (const address of addresses) {
    if ((qtype === 'A' || qtype === 'ANY') && isIPv4(address)) {
      answers.push({ type: 'A', name: question.name, ttl: DNS_TTL_SECONDS, class: 'IN', data: address });
    }
    if ((qtype === 'AAAA' || qtype === 'ANY') && isIPv6(address)) {
      answers.push({ type: 'AAAA', name: question.name, ttl: DNS_TTL_SECONDS, class: 'IN', data: address });
    }
  }
  return withRcode({ ...reply, answers }, 'NOERROR');
}

/** Decodes a query or returns null; malformed input is dropped, never an exception. */
function decode(message: Buffer): Packet | null {
  try {
    const packet = dnsPacket.decode(message);
    return packet.type === 'query' ? packet : null;
  } catch {
    return null;
  }
}

/** The DNS responder of the API process, on UDP and TCP of the same port. */
export class DnsResponder {
  private udp: UdpSocket | null = null;
  private tcp: Server | null = null;
  malformed = 0;

  constructor(
    private readonly zone: string,
    private readonly lookup: LbAddressLookup,
    private readonly log: DnsLogger,
  ) {}

  /** Binds UDP and TCP on the same port; with port 0, retries until a port is free for both. */
  async listen(host: string, port: number): Promise<number> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.bind(host, port);
      } catch (err) {
        this.udp?.close();
        this.udp = null;
        if (port !== 0 || attempt >= 10) throw err;
      }
    }
  }

  private async bind(host: string, port: number): Promise<number> {
    const udp = createSocket(isIPv6(host) ? 'udp6' : 'udp4');
    this.udp = udp;
    udp.on('message', (message, remote) => {
      const query = decode(message);
      if (!query) {
        this.malformed++;
        return;
      }
      answer(query, this.zone, this.lookup)
        .then((reply) => udp.send(encodeReply(reply, message.length, 'udp'), remote.port, remote.address))
        .catch((err: Error) => this.log.warn({ err: err.message }, 'dns reply failed'));
    });
    udp.on('error', (err) => this.log.warn({ err: err.message }, 'dns udp error'));
    await new Promise<void>((resolve, reject) => {
      udp.once('error', reject);
      udp.bind(port, host, () => resolve());
    });
    const bound = udp.address().port;
    const tcp = createServer((socket) => this.serveTcp(socket));
    await new Promise<void>((resolve, reject) => {
      tcp.once('error', reject);
      tcp.listen(bound, host, () => resolve());
    });
    this.tcp = tcp;
    return bound;
  }

  private serveTcp(socket: Socket): void {
    let buffered = Buffer.alloc(0);
    // Replies go out in the order of their queries: each waits for the one before.
    let replied = Promise.resolve();
    socket.setTimeout(5000, () => socket.destroy());
    socket.on('error', () => {});
    socket.on('data', (chunk) => {
      buffered = Buffer.concat([buffered, chunk]);
      while (buffered.length >= 2) {
        const length = buffered.readUInt16BE(0);
        if (length > MAX_TCP_MESSAGE) {
          this.malformed++;
          socket.destroy();
          return;
        }
        if (buffered.length < 2 + length) return;
        const query = decode(buffered.subarray(2, 2 + length));
        buffered = buffered.subarray(2 + length);
        if (!query) {
          this.malformed++;
          socket.destroy();
          return;
        }
        const reply = answer(query, this.zone, this.lookup);
        replied = replied
          .then(async () => {
            socket.write(frameTcp(encodeReply(await reply, length, 'tcp')));
          })
          .catch((err: Error) => {
            this.log.warn({ err: err.message }, 'dns lookup failed');
            socket.destroy();
          });
      }
    });
  }

  close(): void {
    this.udp?.close();
    this.tcp?.close();
  }
}
