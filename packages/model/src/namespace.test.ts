import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import { DeploymentNamespace, namespaceOf, namespaceWithOverrides } from './namespace.js';

describe('deployment namespace', () => {
  it('derives distinct, valid names from distinct cluster ids', () => {
    const a = namespaceOf('slb-0123456789ab');
    const b = namespaceOf('slb-ba9876543210');
    expect(Value.Check(DeploymentNamespace, a)).toBe(true);
    expect(a).toEqual({
      clusterId: 'slb-0123456789ab',
      healthQueue: 'slb-0123456789ab-health',
      healthKeyPrefix: 'slb-0123456789ab:health',
      sessionSyncPrefix: 'slb-0123456789ab:sync',
    });
    for (const key of ['healthQueue', 'healthKeyPrefix', 'sessionSyncPrefix'] as const) expect(a[key]).not.toBe(b[key]);
  });

  it('keeps explicit names and derives the rest', () => {
    expect(namespaceWithOverrides('slb-x', { healthQueue: 'q', sessionSyncPrefix: '' })).toEqual({
      clusterId: 'slb-x',
      healthQueue: 'q',
      healthKeyPrefix: 'slb-x:health',
      sessionSyncPrefix: 'slb-x:sync',
    });
  });
});
