// A provider's `config.api_base` (docs/connectors.md): where its adapter sends requests instead of the
// processor's own API — a local double in tests, an egress proxy. Checked when the system actor registers
// the provider; the adapters that read it (stripe, adyen) share the rules.

import type { SchemaFieldError } from './credentials';

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

/**
 * The errors of `config.api_base` (paths below `root`, e.g. `body/config`): when given, scheme, host and
 * port only (the adapter or its library appends the path, named by `appends`, e.g. `/v1/…`); `https://`
 * always in live, `http://` allowed on loopback in sandbox (local doubles).
 */
export function apiBaseErrors(config: Record<string, unknown>, sandbox: boolean, root: string, appends: string): SchemaFieldError[] {
  const value = config.api_base;
  if (value === undefined) return [];
  const path = `${root}/api_base`;
  if (typeof value !== 'string') return [{ path, message: 'must be a URL string' }];
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return [{ path, message: 'must be an absolute URL' }];
  }
  if ((url.pathname !== '/' && url.pathname !== '') || url.search || url.hash || url.username || url.password) {
    return [{ path, message: `must be scheme, host and port only (${appends} is appended)` }];
  }
  if (url.protocol === 'https:') return [];
  if (url.protocol === 'http:') {
    if (!sandbox) return [{ path, message: 'must be https:// in live' }];
    if (!LOOPBACK_HOSTS.has(url.hostname)) return [{ path, message: 'may be http:// only on loopback (sandbox)' }];
    return [];
  }
  return [{ path, message: 'must be https:// (or http:// on loopback in sandbox)' }];
}

/** The scheme, host and port of an api_base (validated by apiBaseErrors), or of the processor's default. */
export function apiBaseParts(apiBase: string): { protocol: 'http' | 'https'; host: string; port: number } {
  const url = new URL(apiBase);
  const protocol = url.protocol === 'http:' ? 'http' : 'https';
  return { protocol, host: url.hostname, port: url.port ? Number(url.port) : protocol === 'https' ? 443 : 80 };
}
