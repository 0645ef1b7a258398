import type Koa from 'koa';
import { assetUrl } from './assets';

// The shell every hosted checkout page shares: escaping, the document, and the headers that go with it.

/** Text for HTML, in element content and in quoted attributes alike (merchant-supplied names, URLs). */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}


export interface Document {
  title: string;
  body: string;
  /** A `<meta http-equiv="refresh">`: after `seconds`, go to `url` (without JavaScript, the page moves on by itself). */
  refresh?: { seconds: number; url: string };
  /** Whether the page loads its small script (the form's pages only). */
  script?: boolean;
}

export function htmlDocument(doc: Document): string {
  const refresh = doc.refresh ? `<meta http-equiv="refresh" content="${doc.refresh.seconds}; url=${escapeHtml(doc.refresh.url)}">` : '';
  const script = doc.script ? `<script src="${escapeHtml(assetUrl('/checkout/assets/checkout.js'))}" defer></script>` : '';
  return '<!doctype html><html lang="en"><head><meta charset="utf-8">'
    + '<meta name="viewport" content="width=device-width, initial-scale=1">'
    + `<meta name="referrer" content="no-referrer">${refresh}<title>${escapeHtml(doc.title)}</title>`
    + `<link rel="stylesheet" href="${escapeHtml(assetUrl('/checkout/assets/checkout.css'))}">${script}</head>`
    + `<body>${doc.body}</body></html>`;
}

/**
 * The hosted page's policy: nothing but its own stylesheet and script, never framed, forms posted only
 * back to itself — and to `formTargets`, the origins a form's answer may redirect to (Chromium applies
 * form-action to the redirects that follow a submission: the success_url after a payment paid at once).
 */
export function pagePolicy(formTargets: string[] = []): string {
  const targets = ["'self'", ...formTargets].join(' ');
  return `default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; form-action ${targets}; frame-ancestors 'none'; base-uri 'none'`;
}

/** Answers with a page: never cached (it shows one session's state), never sniffed, no referrer sent on. */
export function sendPage(ctx: Koa.Context, status: number, html: string, policy: string = pagePolicy()): void {
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.set({
    'Content-Security-Policy': policy,
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
    // The page's URL is the session's capability: it goes nowhere in a Referer.
    'Referrer-Policy': 'no-referrer',
    'X-Frame-Options': 'DENY',
  });
  ctx.body = html;
}

/** An origin a CSP source list may name: the URL's scheme, host and port, or nothing for a URL that is not http(s). */
export function originOf(url: string): string | undefined {
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'https:' || parsed.protocol === 'http:' ? parsed.origin : undefined;
  } catch {
    return undefined;
  }
}
