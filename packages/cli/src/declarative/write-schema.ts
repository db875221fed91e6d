import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { SCHEMA_FILE, schemaDocument } from './schema-file.js';

// `npm run schema -w @slb/cli` writes it; `--check` fails when the committed one is stale.
const path = fileURLToPath(new URL(`../../${SCHEMA_FILE}`, import.meta.url));
const fresh = schemaDocument();
if (process.argv.includes('--check')) {
  const current = readFileSync(path, 'utf8');
  if (current !== fresh) {
    console.error(`${SCHEMA_FILE} is stale: run npm run schema -w @slb/cli`);
    process.exit(1);
  }
} else {
  writeFileSync(path, fresh);
  console.log(`wrote ${SCHEMA_FILE}`);
}
