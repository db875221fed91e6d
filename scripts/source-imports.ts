import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

// What the repository's own checks (test tiers, cross-workspace imports) need to know about a source file's
// imports: a regular expression is enough for our code, which only uses static `import … from '…'`,
// `export … from '…'` and `import('…')` with string literals.

const SPECIFIER =
  /(?:^|\n)\s*(?:import|export)\s[^;]*?\sfrom\s*'([^']+)'|(?:^|\n)\s*import\s*'([^']+)'|\bimport\(\s*'([^']+)'\s*\)/g;

/** Every module specifier a source file imports or re-exports. */
export function importSpecifiers(source: string): string[] {
  return [...source.matchAll(SPECIFIER)].map((m) => (m[1] ?? m[2] ?? m[3]) as string);
}

/** A relative specifier's file: `./x.js` may be `./x.ts` in the source tree. */
export function resolveRelative(fromFile: string, specifier: string): string | null {
  const path = resolve(dirname(fromFile), specifier);
  for (const candidate of [path, path.replace(/\.js$/, '.ts')]) if (existsSync(candidate)) return candidate;
  return null;
}

/** `@slb/test-support/<x>`'s file, from the package's declared exports. */
export function resolveTestSupport(root: string, specifier: string): string | null {
  const prefix = '@slb/test-support';
  if (specifier !== prefix && !specifier.startsWith(`${prefix}/`)) return null;
  const dir = join(root, 'packages/test-support');
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
    exports: Record<string, string | { default: string }>;
  };
  const target = manifest.exports[`.${specifier.slice(prefix.length)}`];
  if (target === undefined) return null;
  return join(dir, typeof target === 'string' ? target : target.default);
}
