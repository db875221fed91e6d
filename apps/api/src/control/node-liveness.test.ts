import { APPLYING_SILENCE_MAX_MS } from '@slb/model';
import { describe, expect, it } from 'vitest';
import { ManualClock } from './clock.js';
import { LIVENESS_TICK_MS, NodeLiveness } from './node-liveness.js';

const OFFLINE_AFTER_MS = 3000;

/** A node last heard from now, ticked every LIVENESS_TICK_MS as the hub does. */
function setup() {
  const clock = new ManualClock();
  const sessions = new Map();
  const liveness = new NodeLiveness(clock, OFFLINE_AFTER_MS, () => liveness.tick(sessions));
  const node = { lastSeen: clock.now(), applying: null as number | null };
  /** How long the node stays online after its last word, in ticks' steps. */
  const onlineFor = () => {
    let silent = 0;
    while (liveness.isOnline(node) && silent < 120_000) {
      clock.advance(LIVENESS_TICK_MS);
      silent += LIVENESS_TICK_MS;
    }
    return silent;
  };
  return { clock, liveness, node, onlineFor };
}

describe('node liveness', () => {
  it('a quiet node is offline once silent past the threshold', () => {
    const { onlineFor } = setup();
    expect(onlineFor()).toBe(OFFLINE_AFTER_MS + LIVENESS_TICK_MS);
  });

  it('a node that said it is applying a config stays online through a long silence, up to its bound', () => {
    const { clock, liveness, node } = setup();
    node.applying = 42;
    clock.advance(10_000);
    expect(liveness.isOnline(node)).toBe(true);
    clock.advance(APPLYING_SILENCE_MAX_MS - 10_000);
    expect(liveness.isOnline(node)).toBe(true);
    // Hung or dead mid-apply: offline all the same, once past the bound.
    clock.advance(LIVENESS_TICK_MS);
    expect(liveness.isOnline(node)).toBe(false);
  });

  it('once the apply is over the usual threshold holds again', () => {
    const { clock, liveness, node } = setup();
    node.applying = 42;
    clock.advance(2000);
    node.lastSeen = clock.now();
    node.applying = null; // its ack
    clock.advance(OFFLINE_AFTER_MS + LIVENESS_TICK_MS);
    expect(liveness.isOnline(node)).toBe(false);
  });
});
