import { defineConfig } from 'vite';

// The operators' dashboard: a static Preact app served by the API process at /dashboard (api/dashboard.ts).
// Built with `vite build dashboard` (root = this folder). Everything is bundled: no CDN, works offline.
export default defineConfig({
  base: '/dashboard/',
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: { outDir: 'dist', emptyOutDir: true, target: 'es2022', assetsInlineLimit: 0 },
});
