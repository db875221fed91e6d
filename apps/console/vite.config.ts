import { defineConfig } from 'vite';

// Served by the API under /console/ (apps/api/src/console/static.ts); hash routes, so the API needs no
// fallback per page. No modulepreload polyfill: it would be an inline script, which the console's CSP forbids.
export default defineConfig({
  base: '/console/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
    assetsInlineLimit: 0,
  },
});
