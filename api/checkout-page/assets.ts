import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type Koa from 'koa';
import { ApiError } from '../errors';

/** The checkout's static files, from `static/` beside this module (`npm run build` copies them next to the compiled code). */
const STATIC_DIR = join(__dirname, 'static');

/** The card fields' frame: any merchant's page may embed it; it loads only its own files and talks only to this API. */
export const FRAME_POLICY = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors *";

interface Asset { file: string; type: string; cache: string; headers?: Record<string, string> }

const JS = 'text/javascript; charset=utf-8';
const CSS = 'text/css; charset=utf-8';
const SHORT = 'public, max-age=300';

const ASSETS: Record<string, Asset> = {
  '/checkout/assets/checkout.css': { file: 'checkout.css', type: CSS, cache: SHORT },
  '/checkout/assets/checkout.js': { file: 'checkout.js', type: JS, cache: SHORT },
  // The merchant's pages load it by this name (no hash in it), so a fix reaches them within a day.
  '/js/v1/switchboard.js': {
    file: 'switchboard.js', type: JS, cache: 'public, max-age=86400',
    // Any page may load it, with Subresource Integrity too (which needs CORS), and under a COEP policy.
    headers: { 'Access-Control-Allow-Origin': '*', 'Cross-Origin-Resource-Policy': 'cross-origin' },
  },
  // The frame names its script and stylesheet by content (`?v=`), so only this page is asked again.
  '/js/v1/card-frame.html': { file: 'card-frame.html', type: 'text/html; charset=utf-8', cache: 'no-cache', headers: { 'Content-Security-Policy': FRAME_POLICY, 'Referrer-Policy': 'no-referrer' } },
  '/js/v1/card-frame.js': { file: 'card-frame.js', type: JS, cache: SHORT },
  '/js/v1/card-frame.css': { file: 'card-frame.css', type: CSS, cache: SHORT },
};

const IMMUTABLE = 'public, max-age=31536000, immutable';

interface Loaded { body: Buffer; version: string }
const loaded = new Map<string, Loaded>();

/** A file's bytes and the short hash of them that names this version; read once. */
function load(file: string): Loaded | undefined {
  const cached = loaded.get(file);
  if (cached) return cached;
  const path = join(STATIC_DIR, file);
  if (!existsSync(path)) return undefined;
  let body = readFileSync(path);
  if (file === 'card-frame.html') body = Buffer.from(versioned(body.toString('utf8')));
  const entry = { body, version: createHash('sha256').update(body).digest('hex').slice(0, 12) };
  loaded.set(file, entry);
  return entry;
}

/** The frame's page with its script and stylesheet named by version, so that they can be cached for good. */
function versioned(html: string): string {
  return html.replace(/(src|href)="(card-frame\.(?:js|css))"/g, (_all, attribute: string, name: string) => `${attribute}="${assetUrl(`/js/v1/${name}`)}"`);
}

/** An asset's URL with its version: what a page names, so that the browser may keep it for a year. */
export function assetUrl(path: string): string {
  const asset = ASSETS[path];
  const version = asset && load(asset.file)?.version;
  return version ? `${path}?v=${version}` : path;
}

/** Whether a path is one of the checkout's static files (served by `serveAsset`). */
export const isAsset = (path: string): boolean => Object.hasOwn(ASSETS, path);

/** GET or HEAD of a static file: its type, caching, ETag (304 when the browser has it) and policy headers. */
export function serveAsset(ctx: Koa.Context): void {
  const asset = ASSETS[ctx.path];
  ctx.state.routeTemplate = ctx.path;
  if (ctx.method !== 'GET' && ctx.method !== 'HEAD') throw new ApiError('method_not_allowed', undefined, {}, { Allow: 'GET, HEAD' });
  const file = asset && load(asset.file);
  if (!file) {
    ctx.status = 503;
    ctx.type = 'text/plain';
    ctx.body = 'The checkout assets are missing: run `npm run build`.\n';
    return;
  }
  const pinned = ctx.query.v === file.version;
  ctx.set({
    'Cache-Control': pinned ? IMMUTABLE : asset.cache,
    'X-Content-Type-Options': 'nosniff',
    ETag: `"${file.version}"`,
    ...asset.headers,
  });
  ctx.type = asset.type;
  ctx.status = 200;
  if (ctx.fresh) {
    ctx.status = 304;
    return;
  }
  ctx.body = file.body;
}
