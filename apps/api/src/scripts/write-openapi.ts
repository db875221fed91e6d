import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { buildApp } from '../app.js';

/** Writes (or with --check, verifies) openapi/openapi.json from the route schemas. */
const target = fileURLToPath(new URL('../../../../openapi/openapi.json', import.meta.url));
const app = await buildApp({ dbPath: ':memory:', adminToken: 'openapi-generation-only-token' });
await app.ready();
const document = `${JSON.stringify(app.swagger(), null, 2)}\n`;
await app.close();

if (process.argv.includes('--check')) {
  let current = '';
  try {
    current = readFileSync(target, 'utf8');
  } catch {}
  if (current !== document) {
    process.stderr.write('openapi/openapi.json is stale: run `npm run openapi` and commit the result\n');
    process.exit(1);
  }
  process.stdout.write('openapi/openapi.json is up to date\n');
} else {
  writeFileSync(target, document);
  process.stdout.write(`wrote ${target}\n`);
}
