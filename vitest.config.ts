import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// Tests import workspace packages from source, so a change is tested without a rebuild.
// Apps spawned as child processes by integration tests run from dist/ (built by `npm run build`).
const packages = ['model', 'db', 'balancing', 'health', 'client', 'metrics-kit', 'node-runtime'];

export default defineConfig({
  resolve: {
    alias: packages.map((name) => ({
      find: new RegExp(`^@slb/${name}$`),
      replacement: fileURLToPath(new URL(`./packages/${name}/src/index.ts`, import.meta.url)),
    })),
  },
  test: {
    include: [
      'packages/*/src/**/*.test.ts',
      'packages/*/test/**/*.test.ts',
      'apps/*/src/**/*.test.ts',
      'apps/*/test/**/*.test.ts',
      'scripts/*.test.ts',
    ],
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default', './scripts/vitest-summary-reporter.ts'],
  },
});
