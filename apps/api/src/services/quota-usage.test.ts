import { QUOTA_NAMES } from '@slb/model';
import { createTestDb, type TestDb } from '@slb/test-support/test-db';
import { sql } from 'drizzle-orm';
import { afterEach, describe, expect, it } from 'vitest';
import { countQuery } from './quota-usage.js';

// A create checks its quotas by counting, inside its transaction: a count that scans a whole table costs in
// proportion to the fleet (issue #22: listeners had no tenant index, and each listener create read them all).

describe('quota counts', () => {
  let t: TestDb;
  afterEach(() => t?.close());

  it.each(QUOTA_NAMES.filter((n) => n !== 'backends'))('%s reads an index range, not a whole table', (name) => {
    t = createTestDb();
    const plan = t.db.all<{ detail: string }>(sql`EXPLAIN QUERY PLAN ${countQuery(name, 'parent-id')}`);
    const details = plan.map((p) => p.detail);
    expect(details.length).toBeGreaterThan(0);
    // "SEARCH t USING [COVERING] INDEX …" or a primary-key lookup; a bare "SCAN t" reads every row.
    for (const d of details) expect(d).not.toMatch(/^SCAN \w+$/);
  });

  // A tenant's index range grows with the tenant: 100,000 servers cost 0.7 ms a server create (issue #22).
  it.each(['loadBalancers', 'listeners', 'servers', 'certificates', 'acls'] as const)(
    '%s reads the one row usage_counts keeps, not the resources',
    (name) => {
      t = createTestDb();
      const plan = t.db.all<{ detail: string }>(sql`EXPLAIN QUERY PLAN ${countQuery(name, t.tenantId)}`);
      expect(plan.map((p) => p.detail)).toEqual([
        'SEARCH usage_counts USING INDEX sqlite_autoindex_usage_counts_1 (scope=? AND name=?)',
      ]);
    },
  );
});
