import dnsPacket, { type Packet } from 'dns-packet';

/**
 * The largest reply sent over UDP. The responder does not speak EDNS (a query's OPT record is ignored and
 * the reply carries none), so by RFC 1035 a client expects at most 512 bytes and retries over TCP on TC.
 */
export const MAX_UDP_REPLY = 512;
const RCODE_MASK = 0x000f;

/**
 * Encodes a reply so that the responder cannot be used to amplify traffic at a spoofed source:
 * - an error reply (any rcode but NOERROR) is never larger than the query; when echoing the question would
 *   make it so (dns-packet writes names uncompressed, a query may compress them), the question is left out;
 * - over UDP, an answer that does not fit in {@link MAX_UDP_REPLY} bytes is sent as its header and question
 *   with TC set and no answers, and the client asks again over TCP, where a spoofed source cannot.
 */
export function encodeReply(reply: Packet, queryLength: number, transport: 'udp' | 'tcp'): Buffer {
  const encoded = dnsPacket.encode(reply);
  const rcode = (reply.flags ?? 0) & RCODE_MASK;
  if (rcode !== 0) return encoded.length <= queryLength ? encoded : dnsPacket.encode(withoutQuestions(reply));
  if (transport === 'tcp' || encoded.length <= MAX_UDP_REPLY) return encoded;
  const truncated = dnsPacket.encode({
    ...reply,
    flags: (reply.flags ?? 0) | dnsPacket.TRUNCATED_RESPONSE,
    answers: [],
    authorities: [],
    additionals: [],
  });
  // A question longer than 512 bytes cannot be (names are at most 255), but the bound must hold regardless.
  return truncated.length <= MAX_UDP_REPLY
    ? truncated
    : dnsPacket.encode({ ...withoutQuestions(reply), flags: (reply.flags ?? 0) | dnsPacket.TRUNCATED_RESPONSE });
}

function withoutQuestions(reply: Packet): Packet {
  return { ...reply, questions: [], answers: [], authorities: [], additionals: [] };
}

/** TCP framing: the two-byte length dns-packet's streamEncode would write. */
export function frameTcp(message: Buffer): Buffer {
  const length = Buffer.alloc(2);
  length.writeUInt16BE(message.length);
  return Buffer.concat([length, message]);
}
