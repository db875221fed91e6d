import type { ServerResponse } from 'node:http';

// Answers the node gives itself, as RFC 9457 problem+json with a short detail naming the cause.
// Never any internals (addresses, stack traces).

export type NodeAnswer = 'no-route' | 'no-backend' | 'backend-failed' | 'backend-timeout' | 'bad-request';

const ANSWERS: Record<NodeAnswer, { status: number; title: string; detail: string }> = {
  'no-route': { status: 404, title: 'Not Found', detail: 'no forwarding rule matches this host and path' },
  'no-backend': { status: 503, title: 'Service Unavailable', detail: 'no healthy backend server' },
  'backend-failed': { status: 502, title: 'Bad Gateway', detail: 'the backend server connection failed' },
  'backend-timeout': { status: 504, title: 'Gateway Timeout', detail: 'the backend server did not answer in time' },
  'bad-request': { status: 400, title: 'Bad Request', detail: 'malformed request' },
};

export function problemBody(answer: NodeAnswer): { status: number; body: string } {
  const a = ANSWERS[answer];
  const body = JSON.stringify({ type: `about:blank#${answer}`, title: a.title, status: a.status, detail: a.detail });
  return { status: a.status, body };
}

export function sendProblem(res: ServerResponse, answer: NodeAnswer): void {
  const { status, body } = problemBody(answer);
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(status, {
    'content-type': 'application/problem+json',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
  });
  res.end(body);
}

/** The same answer as raw HTTP/1.1 bytes, for the raw-socket fast path; `close` ends the connection after it. */
export function rawProblem(answer: NodeAnswer, close: boolean): string {
  const { status, body } = problemBody(answer);
  const a = ANSWERS[answer];
  return (
    `HTTP/1.1 ${status} ${a.title}\r\ncontent-type: application/problem+json\r\ncontent-length: ${body.length}\r\n` +
    `cache-control: no-store\r\n${close ? 'connection: close\r\n' : ''}\r\n${body}`
  );
}
