import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';

/**
 * The client's request body for one attempt. It reads from the client only once the backend pulls, so an
 * attempt that failed before its connection was up has taken nothing, and the body can go to another
 * backend. Backpressure is the backend's: the client is paused whenever this stream's buffer is full.
 */
export class LazyBody extends Readable {
  /** True once any byte left the client request for this attempt; then it cannot be retried. */
  consumed = false;
  private attached = false;

  constructor(private readonly source: IncomingMessage) {
    super();
  }

  private readonly onData = (chunk: Buffer) => {
    this.consumed = true;
    if (!this.push(chunk)) this.source.pause();
  };
  private readonly onEnd = () => this.push(null);
  private readonly onError = (err: Error) => this.destroy(err);
  private readonly onAborted = () => this.destroy(new Error('client aborted the request body'));

  override _read(): void {
    if (!this.attached) {
      this.attached = true;
      if (this.source.readableEnded) {
        this.push(null);
        return;
      }
      this.source.on('data', this.onData);
      this.source.on('end', this.onEnd);
      this.source.on('error', this.onError);
      this.source.on('aborted', this.onAborted);
    }
    this.source.resume();
  }

  override _destroy(err: Error | null, cb: (err: Error | null) => void): void {
    this.source.removeListener('data', this.onData);
    this.source.removeListener('end', this.onEnd);
    this.source.removeListener('error', this.onError);
    this.source.removeListener('aborted', this.onAborted);
    this.source.pause();
    cb(err);
  }
}
