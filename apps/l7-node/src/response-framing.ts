import { ChunkedFramer, type ResponseHead } from './http1-parser.js';

// Where a backend response body ends (RFC 9112 §6.3), pure: none for HEAD, 204 and 304 whatever their
// headers say; Content-Length; chunked (the raw chunks are forwarded, only their framing is followed); else
// the body runs to the backend's EOF. Also the framing headers the client gets, since the fast path
// drops the backend's own (a repeated Content-Length, Transfer-Encoding as hop-by-hop).

export type BodyKind = 'none' | 'length' | 'chunked' | 'close';

export class ResponseFraming {
  readonly kind: BodyKind;
  /** The body's last byte was seen. */
  complete = false;
  private remaining = 0;
  private readonly chunked: ChunkedFramer | null = null;

  constructor(
    method: string,
    private readonly head: Pick<ResponseHead, 'status' | 'chunked' | 'contentLength'>,
  ) {
    if (method === 'HEAD' || head.status === 204 || head.status === 304) {
      this.kind = 'none';
      this.complete = true;
    } else if (head.chunked) {
      this.kind = 'chunked';
      this.chunked = new ChunkedFramer();
    } else if (head.contentLength >= 0) {
      this.kind = 'length';
      this.remaining = head.contentLength;
      this.complete = this.remaining === 0;
    } else {
      this.kind = 'close';
    }
  }

  /** Appends the framing headers for the client to a flat header list. */
  addHeaders(out: string[]): void {
    if (this.kind === 'chunked') out.push('transfer-encoding', 'chunked');
    // A HEAD or 304 answer keeps the length it describes.
    else if (this.head.contentLength >= 0 && this.kind !== 'close')
      out.push('content-length', String(this.head.contentLength));
  }

  /**
   * How many bytes of `buf[from..]` belong to the body (sets `complete` when its end is among them);
   * -1 on a chunked framing error. A close-delimited body takes everything.
   */
  take(buf: Buffer, from: number): number {
    const avail = buf.length - from;
    switch (this.kind) {
      case 'none':
        return 0;
      case 'length': {
        const n = Math.min(this.remaining, avail);
        this.remaining -= n;
        this.complete = this.remaining === 0;
        return n;
      }
      case 'chunked': {
        const r = this.chunked!.feed(buf, from);
        if (r === -2) return -1;
        if (r === -1) return avail;
        this.complete = true;
        return r - from;
      }
      default:
        return avail;
    }
  }
}
