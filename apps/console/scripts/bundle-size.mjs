// Prints the JavaScript a first visit downloads (the entry chunk and its static imports, gzip level 9),
// and fails the build past the budget. Chunks imported lazily (the charts) are listed apart.
import { readdirSync, readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';

const BUDGET_BYTES = 150 * 1024;
const dist = new URL('../dist/', import.meta.url);
const html = readFileSync(new URL('index.html', dist), 'utf8');
const first = new Set();
for (const m of html.matchAll(/<(?:script[^>]+src|link[^>]+rel="modulepreload"[^>]+href)="\/console\/([^"]+\.js)"/g)) {
  first.add(m[1]);
}
const gz = (file) => gzipSync(readFileSync(new URL(file, dist)), { level: 9 }).length;
const firstLoad = [...first].reduce((sum, f) => sum + gz(f), 0);
const kb = (n) => `${(n / 1024).toFixed(1)} KB`;
console.log(`console: first-load JS ${kb(firstLoad)} gzip (${[...first].join(', ')}; budget ${kb(BUDGET_BYTES)})`);
const later = readdirSync(new URL('assets/', dist))
  .filter((f) => f.endsWith('.js') && !first.has(`assets/${f}`))
  .map((f) => `assets/${f} ${kb(gz(`assets/${f}`))}`);
if (later.length) console.log(`console: loaded on demand: ${later.join(', ')} gzip`);
if (firstLoad > BUDGET_BYTES) {
  console.error(`console: first-load JS is over its budget of ${kb(BUDGET_BYTES)}`);
  process.exit(1);
}
