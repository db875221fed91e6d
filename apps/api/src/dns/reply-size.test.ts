import { createConnection } from 'node:net';
import dnsPacket from 'dns-packet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { askUdp, decodeReply } from '../../test/dns-client.js';
import { MAX_UDP_REPLY } from './reply-size.js';
import { DnsResponder } from './responder.js';

// Amplification: reply sizes against query sizes, over real UDP sockets on loopback.
const LB = 'lb-01m8ner50mnhdg38k7n0';
const BIG = 'lb-01m8ner50mnhdg38k7n1';
const table: Record<string, string[]> = {
  [LB]: ['127.0.0.11', '127.0.0.12'],
  // 40 nodes: 40 A records of ~48 bytes each do not fit in 512.
  [BIG]: Array.from({ length: 40 }, (_, i) => `127.0.1.${i + 1}`),
};
const responder = new DnsResponder('slb.internal', (id) => table[id] ?? null, { warn: () => {} });
let port: number;

beforeAll(async () => {
  port = await responder.listen('127.0.0.1', 0);
});
afterAll(() => responder.close());

const queryUdp = (payload: Buffer, timeoutMs = 2000) => askUdp(port, payload, timeoutMs);

function queryTcp(payload: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const length = Buffer.alloc(2);
    length.writeUInt16BE(payload.length);
    const socket = createConnection({ host: '127.0.0.1', port }, () => socket.write(Buffer.concat([length, payload])));
    let data = Buffer.alloc(0);
    socket.setTimeout(5000, () => socket.destroy(new Error('timeout')));
    socket.on('data', (d) => {
      data = Buffer.concat([data, d]);
      if (data.length >= 2 && data.length >= 2 + data.readUInt16BE(0)) {
        socket.end();
        resolve(data.subarray(2));
      }
    });
    socket.on('error', reject);
  });
}

const query = (name: string) =>
  dnsPacket.encode({ type: 'query', id: 7, flags: dnsPacket.RECURSION_DESIRED, questions: [{ type: 'A', name }] });

/**
 * One full question, then `count - 1` questions that are each a compression pointer to the first name:
 * 6 bytes each on the wire, ~200 bytes each when written out.
 */
function compressedQuestions(count: number): Buffer {
  const first = query(`${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.slb.internal`);
  const header = Buffer.from(first.subarray(0, 12));
  header.writeUInt16BE(count, 4);
  const pointer = Buffer.from([0xc0, 12, 0, 1, 0, 1]);
  return Buffer.concat([header, first.subarray(12), ...Array.from({ length: count - 1 }, () => pointer)]);
}

describe('DNS reply sizes', () => {
  it('refuses a query of several questions with a FORMERR that echoes none and is no larger than the query', async () => {
    const payload = compressedQuestions(270);
    expect(payload.length).toBeGreaterThan(1600);
    expect(dnsPacket.decode(payload).questions).toHaveLength(270); // it is a valid query
    const reply = (await queryUdp(payload))!;
    expect(reply).not.toBeNull();
    expect(reply.length).toBeLessThanOrEqual(payload.length);
    expect(reply.length).toBe(12); // the header alone
    const decoded = decodeReply(reply);
    expect(decoded.rcode).toBe('FORMERR');
    expect(decoded.id).toBe(7);
    expect(decoded.questions).toHaveLength(0);
    // Two questions: still FORMERR, over TCP too.
    const two = compressedQuestions(2);
    const overTcp = await queryTcp(two);
    expect(overTcp.length).toBeLessThanOrEqual(two.length);
    expect(decodeReply(overTcp).rcode).toBe('FORMERR');
  });

  it('error replies to one question are never larger than the query', async () => {
    for (const name of [
      `lb-00000000000000000000.slb.internal`, // NXDOMAIN
      `${'x'.repeat(63)}.${'y'.repeat(63)}.example.com`, // REFUSED
      `${'z'.repeat(60)}.slb.internal`, // NXDOMAIN, not an LB id
    ]) {
      const payload = query(name);
      const reply = (await queryUdp(payload))!;
      expect(reply.length).toBeLessThanOrEqual(payload.length);
      expect(['NXDOMAIN', 'REFUSED']).toContain(decodeReply(reply).rcode);
    }
    // A question whose name is a pointer into the query's header: decodes to more bytes than it takes.
    const header = Buffer.from(query(`${LB}.slb.internal`).subarray(0, 12));
    const pointerIntoHeader = Buffer.concat([header, Buffer.from([0xc0, 0x02, 0, 1, 0, 1])]);
    let decoded: ReturnType<typeof dnsPacket.decode> | null = null;
    try {
      decoded = dnsPacket.decode(pointerIntoHeader);
    } catch {}
    const reply = await queryUdp(pointerIntoHeader, 500);
    if (decoded?.type === 'query') {
      expect(reply).not.toBeNull();
      expect(reply!.length).toBeLessThanOrEqual(pointerIntoHeader.length);
    } else {
      expect(reply).toBeNull();
    }
  });

  it('sets TC with no answers when an answer does not fit in 512 bytes over UDP, and answers in full over TCP', async () => {
    const payload = query(`${BIG}.slb.internal`);
    const reply = (await queryUdp(payload))!;
    expect(reply.length).toBeLessThanOrEqual(MAX_UDP_REPLY);
    const decoded = decodeReply(reply);
    expect(decoded.flag_tc).toBe(true);
    expect(decoded.rcode).toBe('NOERROR');
    expect(decoded.answers).toHaveLength(0);
    expect(decoded.questions?.[0]?.name).toBe(`${BIG}.slb.internal`);
    const full = dnsPacket.decode(await queryTcp(payload));
    expect(full.flag_tc).toBe(false);
    expect(full.answers).toHaveLength(40);
  });

  it('answers that fit are sent whole, without TC', async () => {
    const reply = dnsPacket.decode((await queryUdp(query(`${LB}.slb.internal`)))!);
    expect(reply.flag_tc).toBe(false);
    expect(reply.answers).toHaveLength(2);
  });
});
