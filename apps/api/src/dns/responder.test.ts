import { createSocket } from 'node:dgram';
import { createConnection } from 'node:net';
import dnsPacket from 'dns-packet';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { askUdp, decodeReply } from '../../test/dns-client.js';
import { answer, DnsResponder } from './responder.js';

const LB = 'lb-01m8ner50mnhdg38k7n0';
// The lookup is LoadBalancerService.addressesOf (an LB's VIP; test/vips.test.ts); a table here, so the
// responder is tested on more than one address and both families.
const table: Record<string, string[]> = { [LB]: ['127.0.0.11', '127.0.0.12', '::1'] };
const responder = new DnsResponder('slb.internal', (id) => table[id] ?? null, { warn: () => {} });
let port: number;

beforeAll(async () => {
  port = await responder.listen('127.0.0.1', 0);
});
afterAll(() => responder.close());

const queryUdp = (payload: Buffer, timeoutMs = 1000) => askUdp(port, payload, timeoutMs);

const query = (name: string, type: 'A' | 'AAAA' = 'A') =>
  dnsPacket.encode({
    type: 'query',
    id: 42,
    flags: dnsPacket.RECURSION_DESIRED,
    questions: [{ type, name, class: 'IN' }],
  });

describe('DNS responder', () => {
  it('answers A records of an LB, with a 5 s TTL', async () => {
    const reply = decodeReply((await queryUdp(query(`${LB}.slb.internal`)))!);
    expect(reply.id).toBe(42);
    expect(reply.rcode).toBe('NOERROR');
    expect(reply.answers?.map((a) => (a as { data: string }).data)).toEqual(['127.0.0.11', '127.0.0.12']);
    expect(reply.answers?.every((a) => (a as { ttl: number }).ttl === 5)).toBe(true);
  });

  it('answers AAAA for IPv6 addresses, and is case-insensitive', async () => {
    const reply = dnsPacket.decode((await queryUdp(query(`${LB.toUpperCase()}.SLB.internal`, 'AAAA')))!);
    expect(reply.answers?.map((a) => (a as { data: string }).data)).toEqual(['::1']);
  });

  it('answers NXDOMAIN for unknown names and REFUSED outside the zone', async () => {
    expect(decodeReply((await queryUdp(query('lb-00000000000000000000.slb.internal')))!).rcode).toBe('NXDOMAIN');
    expect(decodeReply((await queryUdp(query('www.example.com')))!).rcode).toBe('REFUSED');
  });

  it('drops UDP garbage without answering, and keeps serving', async () => {
    for (const garbage of [Buffer.from('hello'), Buffer.alloc(0), Buffer.alloc(600, 0xff)]) {
      expect(await queryUdp(garbage, 200)).toBeNull();
    }
    expect(responder.malformed).toBeGreaterThanOrEqual(2);
    expect(decodeReply((await queryUdp(query(`${LB}.slb.internal`)))!).rcode).toBe('NOERROR');
  });

  it('survives fuzzed datagrams (random, bit-flipped and truncated queries, pointer loops), then still answers', async () => {
    const valid = query(`${LB}.slb.internal`);
    const datagram = fc.oneof(
      fc.uint8Array({ maxLength: 600 }).map((a) => Buffer.from(a)),
      fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 }), fc.nat({ max: 20 })).map(([at, byte, n]) => {
        const copy = Buffer.from(valid);
        for (let i = 0; i <= n; i++) copy[(at + i * 7) % copy.length] = (byte + i) & 0xff;
        return copy;
      }),
      fc.nat().map((n) => valid.subarray(0, n % valid.length)),
      // A name whose compression pointer points at itself, and a header claiming 65,535 questions.
      fc.constant(Buffer.concat([valid.subarray(0, 12), Buffer.from([0xc0, 0x0c, 0, 1, 0, 1])])),
      fc.constant(Buffer.concat([Buffer.from([0, 1, 0, 0, 0xff, 0xff, 0, 0, 0, 0, 0, 0]), valid.subarray(12)])),
    );
    const sent = fc.sample(datagram, { numRuns: 300, seed: 11 });
    // Whatever decodes is answered without throwing: the reply is built and encoded in the socket handler,
    // where an exception would take the whole API process down.
    for (const d of sent) {
      let decoded: ReturnType<typeof dnsPacket.decode> | null = null;
      try {
        decoded = dnsPacket.decode(d);
      } catch {}
      if (decoded?.type === 'query') dnsPacket.encode(await answer(decoded, 'slb.internal', (id) => table[id] ?? null));
    }
    const socket = createSocket('udp4');
    for (const d of sent) await new Promise((r) => socket.send(d, port, '127.0.0.1', r));
    socket.close();
    // The burst can overflow the socket's receive buffer, so a query may be dropped: a client retries.
    let reply: Buffer | null = null;
    for (let attempt = 0; attempt < 5 && reply === null; attempt++) reply = await queryUdp(valid, 500);
    expect(dnsPacket.decode(reply!).answers).toHaveLength(2);
    expect(responder.malformed).toBeGreaterThan(100);
  });

  it('answers over TCP too', async () => {
    const reply = await new Promise<Buffer>((resolve, reject) => {
      const socket = createConnection({ host: '127.0.0.1', port }, () =>
        socket.write(dnsPacket.streamEncode(dnsPacket.decode(query(`${LB}.slb.internal`)))),
      );
      let data = Buffer.alloc(0);
      socket.on('data', (d) => {
        data = Buffer.concat([data, d]);
        if (data.length >= 2 && data.length >= 2 + data.readUInt16BE(0)) {
          socket.end();
          resolve(data);
        }
      });
      socket.on('error', reject);
    });
    expect(dnsPacket.streamDecode(reply).answers).toHaveLength(2);
  });
});
