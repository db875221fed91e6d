// node bench/l7-heads.mjs (after npm run build): what the L7 fast path's head handling costs per request, in
// process, on the head nginx answers the anchors' requests with and the head wrk sends: the string path's steps,
// and the string path against the byte path the fast path takes for such heads (response-head-bytes.ts,
// request-head-bytes.ts). A component bench, with
// no reference beside it: bench/README ("Where the L7 time goes") sets it against the node's CPU per request.
// Bounded: ROUNDS rounds (default 5) of N iterations per row (default 200,000), rows interleaved, best round
// shown: a single timing moves by a third with the heap's state.
import { requestHeadersToBackend, responseHeadersToClient, serializeHead } from '../apps/l7-node/dist/headers.js';
import { parseRequestHead, parseResponseHead } from '../apps/l7-node/dist/http1-parser.js';
import { forwardingLines, scanRequestHead, writeRequestHead } from '../apps/l7-node/dist/request-head-bytes.js';
import { scanResponseHead, writeResponseHead } from '../apps/l7-node/dist/response-head-bytes.js';

const N = Number(process.env.N ?? 200_000);
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const RESPONSE =
  'HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Sun, 06 Dec 2026 05:38:12 GMT\r\nContent-Type: text/plain\r\n' +
  'Content-Length: 2\r\nLast-Modified: Sun, 06 Dec 2026 05:13:08 GMT\r\nConnection: keep-alive\r\n' +
  'ETag: "6934bc34-2"\r\nAccept-Ranges: bytes';
const REQUEST = 'GET /ok HTTP/1.1\r\nHost: 127.0.0.1:18200';
const RESPONSE_BYTES = Buffer.from(`${RESPONSE}\r\n\r\n`, 'latin1');
const BODY = Buffer.from('ok');
const HEAD_END = Buffer.from('\r\n\r\n', 'latin1');
const REQUEST_BYTES = Buffer.from(`${REQUEST}\r\n\r\n`, 'latin1');
const fwd = { clientAddress: '127.0.0.1', proto: 'http', frontendPort: 18200, xff: 'replace' };
const FORWARDING = forwardingLines(fwd, undefined);
const parsed = parseResponseHead(RESPONSE);
const request = parseRequestHead(REQUEST);
if (parsed === null || !request.fast) throw new Error('the sample heads no longer parse');
let sink = 0;

const rows = {
  'response: parse': () => {
    sink += parseResponseHead(RESPONSE).headers.length;
  },
  'response: rewrite': () => {
    sink += responseHeadersToClient(parsed.headers, true).headers.length;
  },
  'response: serialize': () => {
    sink += serializeHead('HTTP/1.1 200 OK', parsed.headers).length;
  },
  'response: all three': () => {
    const p = parseResponseHead(RESPONSE);
    sink += serializeHead(`HTTP/1.1 ${p.status} ${p.reason}`, responseHeadersToClient(p.headers, true).headers).length;
  },
  // The two ways the fast path answers, each from the bytes a read brings to the bytes written: the string
  // path searches for the head's end, parses, rewrites and serializes it, and the head is written out as latin1
  // (as the socket's writeLatin1String copies it); the byte path scans and copies. Both with the body and the
  // framing line the node adds.
  'response: string path, to bytes': () => {
    const p = parseResponseHead(RESPONSE_BYTES.toString('latin1', 0, RESPONSE_BYTES.indexOf(HEAD_END)));
    const headers = responseHeadersToClient(p.headers, true).headers;
    headers.push('content-length', '2');
    const text = serializeHead(`HTTP/1.1 ${p.status} ${p.reason}`, headers);
    const out = Buffer.allocUnsafe(text.length + BODY.length);
    out.latin1Write(text, 0);
    BODY.copy(out, text.length);
    sink += out.length;
  },
  'response: byte path (scan, write)': () => {
    const h = scanResponseHead(RESPONSE_BYTES);
    h.extra.push('content-length', '2');
    sink += writeResponseHead(h, BODY, 0, BODY.length).length;
  },
  'request: parse, rewrite, serialize': () => {
    const p = parseRequestHead(REQUEST);
    const h = requestHeadersToBackend(p.head.headers, fwd);
    sink += serializeHead(`${p.head.method} ${p.head.target} HTTP/1.1`, h).length;
  },
  'request: string path, to bytes': () => {
    const p = parseRequestHead(REQUEST_BYTES.toString('latin1', 0, REQUEST_BYTES.indexOf(HEAD_END)));
    const h = requestHeadersToBackend(p.head.headers, fwd);
    sink += Buffer.from(serializeHead(`${p.head.method} ${p.head.target} HTTP/1.1`, h), 'latin1').length;
  },
  // The forwarding lines are made once per client connection (FastConnection.forwardingLines).
  'request: byte path (scan, write)': () => {
    sink += writeRequestHead(scanRequestHead(REQUEST_BYTES), FORWARDING).length;
  },
};

const best = new Map();
for (let round = 0; round <= ROUNDS; round++) {
  for (const [name, f] of Object.entries(rows)) {
    const t = process.hrtime.bigint();
    for (let i = 0; i < N; i++) f();
    const ns = Number(process.hrtime.bigint() - t) / N;
    // Round 0 warms the JIT up and is not counted.
    if (round > 0 && !(best.get(name) <= ns)) best.set(name, ns);
  }
}
console.log(`| head handling (${process.version}, best of ${ROUNDS} × ${N}) | ns per head |`);
console.log('|---|---:|');
for (const [name, ns] of best) console.log(`| ${name} | ${ns.toFixed(0)} |`);
if (sink === 0) console.log('(nothing was computed)');
