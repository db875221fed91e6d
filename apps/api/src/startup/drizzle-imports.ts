import { readFileSync } from 'node:fs';
import nodeModule from 'node:module';
import { fileURLToPath } from 'node:url';

// Node 24's ES module loader looks up the package scope of every file it resolves, and for drizzle-orm that
// means deserializing its 178 KB package.json (mostly `exports`) once per file: about 390 files, 0.7 s of the
// API's start (drizzle-orm/sqlite-core alone: 760 ms on Node 24.22, 70 ms on Node 20). Every API start pays it,
// a restart after a crash included, so this resolves the imports drizzle's own files make of each other here.

const PACKAGE = 'node_modules/drizzle-orm/';

/**
 * The URL of the file a relative `.js` import inside drizzle-orm names, when it stays inside the package; null
 * for any other import (bare specifiers, other packages, the project's own files), which Node resolves.
 */
export function drizzleSiblingUrl(specifier: string, parentUrl: string | undefined): string | null {
  if (parentUrl === undefined || !parentUrl.startsWith('file:')) return null;
  if (!(specifier.startsWith('./') || specifier.startsWith('../')) || !specifier.endsWith('.js')) return null;
  const at = parentUrl.lastIndexOf(`/${PACKAGE}`);
  if (at < 0) return null;
  const root = parentUrl.slice(0, at + PACKAGE.length + 1);
  const url = new URL(specifier, parentUrl).href;
  return url.startsWith(root) ? url : null;
}

/** Whether the drizzle-orm whose root holds this file declares its `.js` files ES modules (read once a root). */
const moduleScopes = new Map<string, boolean>();
function inModuleScope(url: string): boolean {
  const root = url.slice(0, url.lastIndexOf(`/${PACKAGE}`) + PACKAGE.length + 1);
  let isModule = moduleScopes.get(root);
  if (isModule === undefined) {
    try {
      const manifest = JSON.parse(readFileSync(fileURLToPath(`${root}package.json`), 'utf8')) as { type?: string };
      isModule = manifest.type === 'module';
    } catch {
      isModule = false;
    }
    moduleScopes.set(root, isModule);
  }
  return isModule;
}

/**
 * Registers the shortcut in this thread's loader, before the API's modules are imported. Returns false where
 * there is nothing to register: Node before 22.15 has no synchronous hooks (and Node 20 has no such cost), and
 * SLB_DRIZZLE_IMPORTS=node leaves every import to Node.
 */
export function shortcutDrizzleImports(env: NodeJS.ProcessEnv = process.env): boolean {
  const { registerHooks } = nodeModule as Partial<Pick<typeof nodeModule, 'registerHooks'>>;
  if (typeof registerHooks !== 'function' || env.SLB_DRIZZLE_IMPORTS === 'node') return false;
  registerHooks({
    resolve(specifier, context, nextResolve) {
      const url = drizzleSiblingUrl(specifier, context.parentURL);
      if (url === null || !inModuleScope(url)) return nextResolve(specifier, context);
      return { url, format: 'module', shortCircuit: true };
    },
  });
  return true;
}
