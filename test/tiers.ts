import { readdirSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

/**
 * The three test tiers; each runs alone (`npm run test:<tier>`, or `npx vitest run --project <tier>`), and
 * `npm test` runs them in this order, cheapest first.
 *
 * - unit: the test's own process and the source tree. No Redis, no child process that outlives a call (a
 *   synchronous `openssl` making a certificate is fine), nothing built (no dist/). Loopback sockets the test
 *   opens in its own process are allowed: the proxies and probes are socket code, and these take milliseconds.
 * - integration: real Redis or PostgreSQL, processes (apps run from dist/, redis-server, python), so `npm run build`
 *   first.
 * - e2e: a local cloud (scripts/local-cloud.mjs: the API, nodes and health workers as processes), a browser
 *   against one, or a test named `*.e2e.test.ts`.
 *
 * A file's tier: e2e by name or folder, integration when listed below, unit otherwise. A wrong choice fails
 * scripts/test-tiers.test.ts, which reads each file and the test helpers it imports.
 */
export const TIERS = ['unit', 'integration', 'e2e'] as const;
export type Tier = (typeof TIERS)[number];

/** e2e tests that are not named `*.e2e.test.ts`: the console's browser tests run against a local cloud. */
const E2E_FOLDERS = ['apps/console/test/'];

/** Tests that need Redis, PostgreSQL, a child process or a build; repository-relative paths, sorted. */
export const INTEGRATION: readonly string[] = [
  'apps/api/src/control/runtime-share.test.ts',
  'apps/api/src/health/transitions.security.test.ts',
  'apps/api/src/health/transitions.test.ts',
  'apps/api/src/lease/redis-lease.test.ts',
  'apps/api/test/cluster-duties.test.ts',
  'apps/api/test/drizzle-imports.test.ts',
  'apps/api/test/e2e.test.ts',
  'apps/api/test/events-health.test.ts',
  'apps/api/test/events-store.test.ts',
  'apps/api/test/health-transitions-store.test.ts',
  'apps/api/test/idempotency-store.test.ts',
  'apps/api/test/metrics-host.test.ts',
  'apps/api/test/namespace-shared-db.test.ts',
  'apps/api/test/namespaces.test.ts',
  'apps/api/test/node-credentials-store.test.ts',
  'apps/api/test/pg-copy.test.ts',
  'apps/api/test/readiness-store.test.ts',
  'apps/api/test/replicas-app.test.ts',
  'apps/api/test/replicas-store.test.ts',
  'apps/api/test/secrets.security.test.ts',
  'apps/api/test/services-store.test.ts',
  'apps/api/test/tenants-store.test.ts',
  'apps/api/test/traffic-metrics-redis-down.error.test.ts',
  'apps/api/test/traffic-metrics.test.ts',
  'apps/api/test/write-effects.test.ts',
  'apps/health-worker/src/app.test.ts',
  'apps/health-worker/src/state-store.test.ts',
  'apps/health-worker/test/backend-deny.test.ts',
  'apps/health-worker/test/fleet.test.ts',
  'apps/health-worker/test/schedule.test.ts',
  'apps/health-worker/test/scheduler-job-id.test.ts',
  'apps/health-worker/test/thresholds.test.ts',
  'apps/l4-node/test/api-failover.test.ts',
  'apps/l4-node/test/fd-budget.test.ts',
  'apps/l4-node/test/file-mode-parity.test.ts',
  'apps/l4-node/test/large-apply.test.ts',
  'apps/l4-node/test/main.test.ts',
  'apps/l4-node/test/session-sync-redis-restart.test.ts',
  'apps/l4-node/test/session-sync.test.ts',
  'apps/l4-node/test/tcp-retry.test.ts',
  'apps/l4-node/test/vip-process.test.ts',
  'apps/l7-node/test/main-process.test.ts',
  'apps/l7-node/test/sticky-sync.test.ts',
  'apps/l7-node/test/upgrade-tunnel.test.ts',
  'apps/l7-node/test/workers-process.test.ts',
  'packages/cli/test/errors-output.test.ts',
  'packages/cli/test/help-completion.test.ts',
  'packages/cli/test/profiles.test.ts',
  'packages/cli/test/resources.test.ts',
  'packages/cli/test/watch.test.ts',
  'packages/db/test/pg-copy-cli.test.ts',
  'packages/db/test/pg-copy.test.ts',
  'packages/db/test/pg-migrate.test.ts',
  'packages/db/test/pg-usage-counts.test.ts',
  'packages/db/test/store.test.ts',
  'packages/node-runtime/src/run-node.test.ts',
  'packages/node-runtime/src/session-sync-namespace.test.ts',
  'packages/node-runtime/src/session-sync.test.ts',
];

const integration = new Set(INTEGRATION);

/** The tier of a test file, from its repository-relative path. */
export function tierOf(file: string): Tier {
  if (file.endsWith('.e2e.test.ts') || E2E_FOLDERS.some((folder) => file.startsWith(folder))) return 'e2e';
  return integration.has(file) ? 'integration' : 'unit';
}

/**
 * Where test files live: beside the code, in each workspace's test/, in scripts/, bench/ (the benches' pure
 * arithmetic) and top-level test/.
 */
const TEST_ROOTS = ['apps', 'packages', 'scripts', 'bench', 'test'];
const SKIPPED_FOLDERS = new Set(['node_modules', 'dist', '.turbo']);

/** Every `*.test.ts` under the test roots, as sorted repository-relative paths with forward slashes. */
export function findTestFiles(root: string): string[] {
  const found: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (SKIPPED_FOLDERS.has(entry.name)) continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.test.ts')) found.push(relative(root, path).split(sep).join('/'));
    }
  };
  for (const top of TEST_ROOTS) walk(join(root, top));
  return found.sort();
}

/** The test files of one tier. */
export function testFilesOf(root: string, tier: Tier): string[] {
  return findTestFiles(root).filter((file) => tierOf(file) === tier);
}
