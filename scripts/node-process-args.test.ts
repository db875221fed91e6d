import { spawnSync } from 'node:child_process';
import { expect, it } from 'vitest';
import { localCloudServices, NODE_PROCESS_ARGS } from './topology.mjs';

// The forwarding nodes start with NODE_PROCESS_ARGS: Node 24 gave their young generation 64 MiB semi-spaces
// on this machine, and an L4 node holding 10,000 listeners stayed 100 MiB above what it kept live.

/** The young generation a Node.js process grows to under `args`, MiB, after a bounded burst of garbage. */
function youngGenerationMiB(args: readonly string[]): number {
  const probe = `
    const v8 = require('node:v8');
    const keep = [];
    for (let r = 0; r < 12; r++) {
      const batch = Array.from({ length: 100000 }, (_, i) => ({ i, s: 'x' + i, a: [i] }));
      keep.push(batch.filter((_, i) => i % 100 === 0));
    }
    const space = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
    process.stdout.write(String(space.space_size / 1048576));`;
  const run = spawnSync(process.execPath, [...args, '-e', probe], { encoding: 'utf8', timeout: 30_000 });
  expect(run.status, run.stderr).toBe(0);
  return Number(run.stdout);
}

it('bounds the forwarding nodes young generation to 16 MiB semi-spaces', () => {
  expect(NODE_PROCESS_ARGS).toEqual(['--max-semi-space-size=16']);
  // Two semi-spaces of at most 16 MiB.
  expect(youngGenerationMiB(NODE_PROCESS_ARGS)).toBeLessThanOrEqual(32);
});

it('is how the local cloud starts every forwarding node, and nothing else', () => {
  const services = localCloudServices({
    root: '/r',
    dataDir: '/d',
    apiHost: '127.0.0.1',
    apiPort: 1,
    dnsPort: 2,
    redisUrl: 'redis://127.0.0.1:6379',
    adminToken: 'a',
    nodeToken: 'n',
  });
  for (const s of services) {
    expect(s.args ?? [], s.name).toEqual(s.kind.endsWith('-node') ? NODE_PROCESS_ARGS : []);
  }
});
