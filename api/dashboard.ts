import { createReadStream, existsSync, statSync } from 'node:fs';
import { extname, join, resolve, sep } from 'node:path';
import type Koa from 'koa';
import { ROOT_DIR } from '../db/local-state';

/** Where `npm run build` (vite build dashboard) puts the dashboard. */
export const DASHBOARD_DIR = join(ROOT_DIR, 'dashboard', 'dist');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.woff2': 'font/woff2',
};

/**
 * Serves the built dashboard at /dashboard: files as they are (hashed assets cached for good), and the
 * app's index.html for every other path under it (client-side routes). The app reads data only
 * through /v1 with the operator's own credential, so nothing here needs authentication.
 */
export function serveDashboard(dir = DASHBOARD_DIR): Koa.Middleware {
  const root = resolve(dir);
  // Every other request passes straight through, without a promise of this middleware's own.
  return (ctx, next) => ((ctx.path === '/dashboard' || ctx.path.startsWith('/dashboard/')) ? serve(ctx, next) : next());

  async function serve(ctx: Koa.Context, next: Koa.Next): Promise<unknown> {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return next();
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.set('X-Frame-Options', 'DENY');
    ctx.set('Content-Security-Policy', "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'");

    const index = join(root, 'index.html');
    if (!existsSync(index)) {
      ctx.status = 503;
      ctx.type = 'text/plain';
      ctx.body = 'The dashboard is not built: run `npm run build` (or `npm start`).\n';
      return;
    }
    let relative: string;
    try {
      relative = decodeURIComponent(ctx.path.slice('/dashboard'.length));
    } catch {
      relative = '';
    }
    const file = resolve(root, `.${relative.startsWith('/') ? relative : `/${relative}`}`);
    const inside = file === root || file.startsWith(root + sep);
    const isFile = inside && file !== root && existsSync(file) && statSync(file).isFile();
    if (!isFile && relative.startsWith('/assets/')) {
      ctx.status = 404;
      ctx.type = 'text/plain';
      ctx.body = 'Not found\n';
      return;
    }
    const served = isFile ? file : index;
    ctx.type = TYPES[extname(served)] ?? 'application/octet-stream';
    ctx.set('Cache-Control', served.includes(`${sep}assets${sep}`) ? 'public, max-age=31536000, immutable' : 'no-cache');
    ctx.length = statSync(served).size;
    if (ctx.method === 'HEAD') ctx.status = 200;
    else ctx.body = createReadStream(served);
  }
}
