import { afterEach, describe, expect, it, vi } from 'vitest';
import { type FastConnection, FastConnections } from './fast-connection.js';

/** What the registry asks of a connection: its tick, and its socket when it closes them all. */
const conn = () => {
  const c = { ticks: 0, tick: () => c.ticks++, socket: { destroy: () => {} } };
  return c as typeof c & FastConnection;
};

describe('FastConnections', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('sweeps only while it holds connections', () => {
    vi.useFakeTimers();
    const idle = new FastConnections(500);
    expect(vi.getTimerCount()).toBe(0);
    const c = conn();
    idle.add(c);
    idle.add(conn());
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(1000);
    expect(c.ticks).toBe(2);
    idle.delete(c);
    vi.advanceTimersByTime(500);
    expect(c.ticks).toBe(2);
    expect(idle.sweeping).toBe(true);
    idle.close();
    expect(idle.sweeping).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('stops at the first tick that finds none, and starts again with the next connection', () => {
    vi.useFakeTimers();
    const r = new FastConnections(500);
    const c = conn();
    r.add(c);
    r.delete(c);
    vi.advanceTimersByTime(500);
    expect(r.sweeping).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
    r.add(c);
    vi.advanceTimersByTime(500);
    expect(c.ticks).toBe(1);
    r.close();
  });
});
