// Buffer is imported, not taken from globalThis, where it is an accessor (a getter call per use).
import { Buffer } from 'node:buffer';

/** Consecutive reads smaller than the small buffer after which a grown buffer is given back. */
export const SMALL_READS_TO_SHRINK = 8;

/**
 * The buffer a socket read with `onread` reads into, reused from read to read instead of a fresh
 * allocation per read: at tens of thousands of reads a second those allocations kept V8's garbage
 * collector busy. It starts small, so an idle connection holds little, grows once a read fills it (a
 * bulk flow: fewer, larger reads) and shrinks back after a run of small reads. One small read is not
 * enough: an HTTP backend often sends a response's head and body in separate segments, and shrinking and
 * growing again on every response cost more than the allocations saved.
 */
export class ReadBuffer {
  current: Buffer;
  private smallReads = 0;

  /** `initial`: a `min`-sized buffer to start with (one given back by a closed socket), instead of a new one. */
  constructor(
    readonly min: number,
    readonly max: number,
    initial?: Buffer,
  ) {
    this.current = initial ?? Buffer.allocUnsafeSlow(min);
  }

  /**
   * After `n` bytes were read into `current`: the buffer for the next read. `held` says the bytes just read
   * are still referenced (a write of them is pending), so the next read must go into another buffer.
   */
  afterRead(n: number, held: boolean): Buffer {
    const size = this.current.length;
    this.smallReads = n < this.min ? this.smallReads + 1 : 0;
    if (n === size && size < this.max) this.current = Buffer.allocUnsafeSlow(this.max);
    else if (this.smallReads >= SMALL_READS_TO_SHRINK && size > this.min)
      this.current = Buffer.allocUnsafeSlow(this.min);
    else if (held) this.current = Buffer.allocUnsafeSlow(size);
    return this.current;
  }
}
