import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import {
  detectRuntimeCapabilities,
  missingCapabilities,
  probeReusePort,
  reusePortByVersion,
} from './runtime-capabilities.js';
import { reportRuntime } from './runtime-report.js';

describe('reusePortByVersion', () => {
  it.each([
    ['v20.20.2', false],
    ['v22.11.0', false],
    ['v22.12.0', true],
    ['v23.0.0', false],
    ['v23.1.0', true],
    ['v24.22.3', true],
    ['v26.0.0', true],
    ['garbage', false],
  ])('%s → %s', (version, expected) => {
    expect(reusePortByVersion(version)).toBe(expected);
  });
});

describe('on this runtime', () => {
  // The probe binds real sockets: on Linux it must agree with the version rule, or Node changed reusePort.
  it('the probe agrees with the version rule', async () => {
    expect(await probeReusePort()).toBe(reusePortByVersion(process.version));
  });

  it('reports a missing reusePort with the runtime and what to install', async () => {
    const caps = await detectRuntimeCapabilities();
    expect(caps.node).toBe(process.version);
    const missing = missingCapabilities(caps);
    if (caps.reusePort) expect(missing).toEqual([]);
    else expect(missing).toEqual([{ name: 'reusePort', reason: expect.stringContaining('needs 22.12+') }]);
  });

  it('logs and exports the runtime as slb_runtime_info', async () => {
    const registry = new Registry();
    const lines: { level: string; obj: object; msg: string }[] = [];
    const logger = {
      info: (obj: object, msg: string) => lines.push({ level: 'info', obj, msg }),
      warn: (obj: object, msg: string) => lines.push({ level: 'warn', obj, msg }),
    };
    const caps = await reportRuntime(registry, logger);
    const text = await registry.metrics();
    expect(text).toContain(`slb_runtime_info{node_version="${process.version}",reuse_port="${caps.reusePort}"} 1`);
    expect(lines).toHaveLength(1);
    expect(lines[0]!.level).toBe(caps.reusePort ? 'info' : 'warn');
    if (!caps.reusePort) expect(lines[0]!.msg).toMatch(/lacks reusePort/);
  });
});

describe('missingCapabilities', () => {
  it('blames the kernel when the runtime is new enough', () => {
    expect(missingCapabilities({ node: 'v24.22.3', reusePort: false })[0]!.reason).toMatch(/host refused/);
  });
});
