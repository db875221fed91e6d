// The postgres run's PostgreSQL (npm test's `postgres` run, SLB_TEST_DATABASE=postgres): makeApp loads this
// only in that run, so the unit tier's tests that build apps never need a PostgreSQL (scripts/test-tiers.test.ts
// knows this file by name).
export { createTestPgDatabase } from '@slb/test-support/pg-database';
