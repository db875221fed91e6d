import { describe, expect, it } from 'vitest';
import {
  controlChannelUrl,
  loggableUrl,
  RETURN_AFTER_READY,
  ReplicaRotation,
  ReturnToEarlier,
  SEVERAL_REPLICAS_CAP_MS,
} from './api-urls.js';

describe('the channel URL', () => {
  it('the channel URL is the base URL in ws(s) with the path', () => {
    expect(controlChannelUrl('http://a:8080/', '/control/v1/channel')).toBe('ws://a:8080/control/v1/channel');
    expect(controlChannelUrl('https://b', '/p')).toBe('wss://b/p');
  });

  it('logs a URL without its password', () => {
    expect(loggableUrl('http://a:8080')).toBe('http://a:8080');
    expect(loggableUrl('https://u:s3cret@b/')).toBe('https://u:***@b/');
  });
});

describe('ReplicaRotation', () => {
  const half = () => 0.5; // jitter factor 1: reconnectDelay gives its ceiling

  it('with one URL: the backoff a node always had (200, 400, 800 … capped), back to the start after a connection', () => {
    const r = new ReplicaRotation(['http://a'], 3000, half);
    expect([r.next(false), r.next(false), r.next(false), r.next(false), r.next(false)]).toEqual([
      200, 400, 800, 1600, 3000,
    ]);
    expect(r.index).toBe(0);
    r.connected();
    expect(r.next(true)).toBe(200);
    expect(r.next(false)).toBe(400);
  });

  it('a failed dial moves to the next replica at once; the backoff is waited once per round of the list', () => {
    const r = new ReplicaRotation(['http://a', 'http://b', 'http://c'], 3000, half);
    const dials: [string, number][] = [];
    for (let i = 0; i < 7; i++) {
      const wait = r.next(false);
      dials.push([r.current, wait]);
    }
    expect(dials).toEqual([
      ['http://b', 0],
      ['http://c', 0],
      ['http://a', 200],
      ['http://b', 0],
      ['http://c', 0],
      ['http://a', 400],
      ['http://b', 0],
    ]);
    for (let i = 0; i < 20; i++) r.next(false);
    expect(r.next(false) + r.next(false) + r.next(false)).toBe(SEVERAL_REPLICAS_CAP_MS); // one round's wait
  });

  it('stays on the replica it connected to; when that connection drops it moves on after the first backoff step', () => {
    const r = new ReplicaRotation(['http://a', 'http://b'], 3000, half);
    expect(r.next(false)).toBe(0); // a refused
    expect(r.current).toBe('http://b');
    r.connected();
    expect(r.current).toBe('http://b');
    expect(r.next(true)).toBe(200); // b died
    expect(r.current).toBe('http://a');
    expect(r.next(false)).toBe(0); // a still dead: b at once
    expect(r.current).toBe('http://b');
    expect(r.next(false)).toBe(400); // a whole round failed: back off
    expect(r.current).toBe('http://a');
  });

  it('never waits longer than its cap between rounds, jitter included: 3 s with one URL, 1 s with several', () => {
    const longest = (urls: string[]) => {
      const r = new ReplicaRotation(urls, 3000, () => 0.999);
      let max = 0;
      for (let i = 0; i < 40; i++) max = Math.max(max, r.next(false));
      return max;
    };
    expect(longest(['http://a'])).toBe(3000);
    expect(longest(['http://a', 'http://b'])).toBe(SEVERAL_REPLICAS_CAP_MS);
  });

  it('wants at least one URL', () => {
    expect(() => new ReplicaRotation([])).toThrow('no control plane URL');
  });
});

describe('ReturnToEarlier', () => {
  it('moves back once the same earlier replica answered ready RETURN_AFTER_READY times in a row', () => {
    const r = new ReturnToEarlier();
    const answers = Array.from({ length: RETURN_AFTER_READY }, () => r.observe(0));
    expect(answers).toEqual([...Array(RETURN_AFTER_READY - 1).fill(false), true]);
  });

  it('starts counting over when the answer changes, or the node connected again', () => {
    const r = new ReturnToEarlier();
    // Ready, not ready, ready: a flapping replica never pulls the node back.
    for (let i = 0; i < 10; i++) expect(r.observe(i % 2 === 0 ? 0 : null)).toBe(false);
    // Another replica is the earliest ready now: its own count.
    for (let i = 0; i < RETURN_AFTER_READY - 1; i++) r.observe(1);
    expect(r.observe(0)).toBe(false);
    for (let i = 0; i < RETURN_AFTER_READY - 2; i++) r.observe(0);
    r.reset();
    expect(r.observe(0)).toBe(false);
  });
});
