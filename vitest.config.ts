import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { TIERS, testFilesOf } from './test/tiers.js';

const root = fileURLToPath(new URL('.', import.meta.url));

interface Manifest {
  name: string;
  exports?: Record<string, string | { default: string }>;
}

// Tests import workspace packages from source, so a change is tested without a rebuild: every subpath a
// workspace declares in `exports` (`@slb/model`, `@slb/api/health`, `@slb/test-support/fleet` …) maps its
// dist/*.js to src/*.ts. Apps spawned as child processes by integration tests run from dist/ (built by
// `npm run build`).
function sourceAliases(): { find: RegExp; replacement: string }[] {
  const aliases: { find: RegExp; replacement: string }[] = [];
  for (const group of ['packages', 'apps']) {
    for (const dir of readdirSync(new URL(`./${group}/`, import.meta.url))) {
      let manifest: Manifest;
      try {
        manifest = JSON.parse(readFileSync(new URL(`./${group}/${dir}/package.json`, import.meta.url), 'utf8'));
      } catch {
        continue;
      }
      for (const [subpath, target] of Object.entries(manifest.exports ?? {})) {
        const file = (typeof target === 'string' ? target : target.default)
          .replace(/^\.\/dist\//, './src/')
          .replace(/\.js$/, '.ts');
        const specifier = `${manifest.name}${subpath.slice(1)}`.replace(/[/.-]/g, '\\$&');
        aliases.push({
          find: new RegExp(`^${specifier}$`),
          replacement: fileURLToPath(new URL(`./${group}/${dir}/${file.slice(2)}`, import.meta.url)),
        });
      }
    }
  }
  return aliases;
}

export default defineConfig({
  resolve: { alias: sourceAliases() },
  test: {
    // One project per tier (test/tiers.ts says what belongs where): `npx vitest run --project unit`.
    projects: TIERS.map((tier) => ({ extends: true, test: { name: tier, include: testFilesOf(root, tier) } })),
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default', './scripts/vitest-summary-reporter.ts'],
  },
});
