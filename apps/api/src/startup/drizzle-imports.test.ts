import { describe, expect, it } from 'vitest';
import { drizzleSiblingUrl, shortcutDrizzleImports } from './drizzle-imports.js';

// Which imports the API's start resolves itself (the rest go to Node's loader). That the answers equal Node's,
// over every drizzle-orm file the API loads, is apps/api/test/drizzle-imports.test.ts.

const DRIZZLE = 'file:///srv/slb/node_modules/drizzle-orm';

describe('drizzleSiblingUrl', () => {
  it('resolves a relative .js import between drizzle-orm files', () => {
    expect(drizzleSiblingUrl('./columns/text.js', `${DRIZZLE}/sqlite-core/index.js`)).toBe(
      `${DRIZZLE}/sqlite-core/columns/text.js`,
    );
    expect(drizzleSiblingUrl('../entity.js', `${DRIZZLE}/sqlite-core/table.js`)).toBe(`${DRIZZLE}/entity.js`);
  });

  it('leaves every other import to Node', () => {
    const parent = `${DRIZZLE}/sqlite-core/table.js`;
    expect(drizzleSiblingUrl('drizzle-orm/sqlite-core', 'file:///srv/slb/apps/api/dist/app.js')).toBeNull();
    expect(drizzleSiblingUrl('./app.js', 'file:///srv/slb/apps/api/dist/main.js'), 'the project').toBeNull();
    expect(drizzleSiblingUrl('./index.js', 'file:///srv/slb/node_modules/ajv/dist/x.js'), 'another package').toBeNull();
    expect(drizzleSiblingUrl('better-sqlite3', parent), 'a bare specifier').toBeNull();
    expect(drizzleSiblingUrl('./index.cjs', parent), 'not .js').toBeNull();
    expect(drizzleSiblingUrl('./data.json', parent)).toBeNull();
    expect(drizzleSiblingUrl('../../ajv/dist/ajv.js', parent), 'climbing out of the package').toBeNull();
    expect(drizzleSiblingUrl('./x.js', undefined), 'no parent').toBeNull();
    expect(drizzleSiblingUrl('./x.js', 'data:text/javascript,1'), 'not a file').toBeNull();
  });

  it('takes the innermost drizzle-orm when one sits inside another package', () => {
    const nested = 'file:///srv/node_modules/drizzle-orm/node_modules/x/node_modules/drizzle-orm';
    expect(drizzleSiblingUrl('../entity.js', `${nested}/pg-core/table.js`)).toBe(`${nested}/entity.js`);
    expect(drizzleSiblingUrl('../../../index.js', `${nested}/pg-core/table.js`)).toBeNull();
  });
});

describe('shortcutDrizzleImports', () => {
  it('registers nothing when told to leave imports to Node', () => {
    expect(shortcutDrizzleImports({ SLB_DRIZZLE_IMPORTS: 'node' })).toBe(false);
  });
});
