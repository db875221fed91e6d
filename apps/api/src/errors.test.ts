import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, ERROR_STATUS, isErrorCode, problem } from './errors.js';
import { FASTIFY_CODES } from './plugins/errors.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..', '..');

/** Every non-test TypeScript source of the API, with its text. */
function sources(dir = here): { file: string; text: string }[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    if (!entry.name.endsWith('.ts') || entry.name.endsWith('.test.ts')) return [];
    return [{ file: path.slice(here.length + 1), text: readFileSync(path, 'utf8') }];
  });
}

/** The literal codes given to ApiError or problem() anywhere, over line breaks (a wrapped call). */
function emittedCodes(): Map<string, string> {
  const found = new Map<string, string>();
  for (const { file, text } of sources()) {
    for (const match of text.matchAll(/\b(?:ApiError|problem)\(\s*'([^']*)'/g)) found.set(match[1]!, file);
  }
  for (const code of Object.values(FASTIFY_CODES)) found.set(code, 'plugins/errors.ts');
  return found;
}

describe('the error registry', () => {
  it('holds every code the API can emit', () => {
    const emitted = emittedCodes();
    // Enough to know the scan sees the calls: a scan that finds nothing would pass anything.
    expect(emitted.size).toBeGreaterThan(20);
    const unknown = [...emitted].filter(([code]) => !isErrorCode(code)).map(([code, file]) => `${code} (${file})`);
    expect(unknown).toEqual([]);
  });

  it('gives each code its own status, title and type', () => {
    for (const code of ERROR_CODES) {
      const body = problem(code, 'detail');
      expect(body.status).toBe(ERROR_STATUS[code]);
      expect(body.title).toMatch(/^[A-Z]/);
      expect(body.type).toBe(`https://slb.dev/problems/${code.replaceAll('_', '-')}`);
    }
  });

  it('is a closed type: a misspelt code fails to compile', () => {
    // Test files are outside `npm run typecheck`, so the type-level checks are compiled here.
    const fixture = join(root, 'apps/api/test/fixtures/problem-codes.types.ts');
    const base = ts.readConfigFile(join(root, 'tsconfig.base.json'), ts.sys.readFile);
    const { options } = ts.convertCompilerOptionsFromJson(base.config.compilerOptions, root);
    const program = ts.createProgram([fixture], {
      ...options,
      noEmit: true,
      composite: false,
      declaration: false,
      declarationMap: false,
    });
    const errors = ts
      .getPreEmitDiagnostics(program)
      .map((d) => `${d.file?.fileName ?? ''}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
    expect(errors).toEqual([]);
  }, 60_000);
});
