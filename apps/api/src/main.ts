import { shortcutDrizzleImports } from './startup/drizzle-imports.js';

// The API's modules are imported only once the shortcut is in place (startup/drizzle-imports.ts says why).
shortcutDrizzleImports();
await import('./server.js');
