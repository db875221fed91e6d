import { connect, createServer, type Socket } from 'node:net';

// A deliberately simple HTTP/1.1 client for tests that need to see the wire: pipelining, framing, what a
// keep-alive connection carries after a HEAD or a 304.

export interface RawResponse {
  readonly status: number;
  /** Lower-cased names; repeated headers joined with ', '. */
  readonly headers: Record<string, string>;
  readonly body: Buffer;
}

export interface Conversation {
  readonly responses: RawResponse[];
  /** The server closed the connection. */
  readonly closed: boolean;
  /** Bytes after the last complete response (a desync shows up here). */
  readonly rest: Buffer;
}

/** Parses as many complete responses as `buf` holds; `heads` says which requests were HEAD. */
function parseResponses(buf: Buffer, heads: boolean[], closed: boolean): { responses: RawResponse[]; rest: Buffer } {
  const responses: RawResponse[] = [];
  let at = 0;
  for (;;) {
    const end = buf.indexOf('\r\n\r\n', at);
    if (end < 0) break;
    const lines = buf.toString('latin1', at, end).split('\r\n');
    const status = Number(lines[0]!.split(' ')[1]);
    const headers: Record<string, string> = {};
    for (const l of lines.slice(1)) {
      const c = l.indexOf(':');
      const name = l.slice(0, c).toLowerCase();
      const value = l.slice(c + 1).trim();
      headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
    }
    let p = end + 4;
    let body: Buffer;
    const noBody = status < 200 || status === 204 || status === 304 || (status >= 200 && heads[responses.length]);
    if (noBody) {
      body = Buffer.alloc(0);
    } else if (headers['transfer-encoding'] === 'chunked') {
      const parts: Buffer[] = [];
      let ok = false;
      for (;;) {
        const le = buf.indexOf('\r\n', p);
        if (le < 0) break;
        const size = Number.parseInt(buf.toString('latin1', p, le), 16);
        if (size === 0) {
          const te = buf.indexOf('\r\n\r\n', le);
          if (te < 0) break;
          p = te + 4;
          ok = true;
          break;
        }
        if (buf.length < le + 2 + size + 2) break;
        parts.push(buf.subarray(le + 2, le + 2 + size));
        p = le + 2 + size + 2;
      }
      if (!ok) break;
      body = Buffer.concat(parts);
    } else if (headers['content-length'] !== undefined) {
      const n = Number(headers['content-length']);
      if (buf.length < p + n) break;
      body = buf.subarray(p, p + n);
      p += n;
    } else {
      if (!closed) break;
      body = buf.subarray(p);
      p = buf.length;
    }
    if (status >= 200) responses.push({ status, headers, body });
    at = p;
  }
  return { responses, rest: buf.subarray(at) };
}

/**
 * Writes `data` on one connection and reads until `expect` final responses arrived or the server closed
 * (bounded by `timeoutMs`). `heads[i]` marks the i-th request as HEAD.
 */
export function converse(
  port: number,
  data: string | Buffer,
  expect: number,
  opts: { heads?: boolean[]; timeoutMs?: number } = {},
): Promise<Conversation> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const heads = opts.heads ?? [];
    const s: Socket = connect(port, '127.0.0.1', () => s.write(data));
    let done = false;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      s.destroy();
      resolve({ ...parseResponses(Buffer.concat(chunks), heads, closed), closed });
    };
    const timer = setTimeout(() => finish(false), opts.timeoutMs ?? 3000);
    s.on('data', (c: Buffer) => {
      chunks.push(c);
      const r = parseResponses(Buffer.concat(chunks), heads, false);
      // Wait a moment past the last expected response: stray bytes after it must show in `rest`.
      if (r.responses.length >= expect) setTimeout(() => finish(false), 50);
    });
    s.on('error', () => finish(true));
    s.on('close', () => finish(true));
  });
}

export interface RawBackend {
  readonly port: number;
  /** Connections accepted so far. */
  connections: number;
  /** Request heads received, in order. */
  readonly heads: string[];
  close(): Promise<void>;
}

/**
 * A backend that writes whatever `answer` returns for each request head (requests without bodies); a
 * `null` answer destroys the connection instead. For responses node:http would never send.
 */
export async function startRawBackend(
  answer: (head: string, nthOnConnection: number, socket: Socket) => string | Buffer | null,
): Promise<RawBackend> {
  const sockets = new Set<Socket>();
  const state: RawBackend = {
    port: 0,
    connections: 0,
    heads: [],
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
  const server = createServer((s) => {
    state.connections++;
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => {});
    let buf = Buffer.alloc(0);
    let n = 0;
    s.on('data', (c: Buffer) => {
      buf = Buffer.concat([buf, c]);
      for (let end = buf.indexOf('\r\n\r\n'); end >= 0; end = buf.indexOf('\r\n\r\n')) {
        const head = buf.toString('latin1', 0, end);
        buf = buf.subarray(end + 4);
        state.heads.push(head);
        const out = answer(head, n++, s);
        if (out === null) {
          s.destroy();
          return;
        }
        s.write(out);
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  (state as { port: number }).port = (server.address() as { port: number }).port;
  return state;
}
