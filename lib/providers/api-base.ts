// A provider's `config.api_base` (docs/connectors.md): where its adapter sends requests instead of the
// processor's own API — a local double in tests, an egress proxy. Checked when the system actor registers
// the provider; the adapters that read it (stripe, adyen) share the rules. Outside the sandbox it must
// also name one of the processor's own hosts (or one the operator added): whoever answers a live
// provider's requests decides which charges "succeed".

import type { SchemaFieldError } from './credentials';
import { isDnsLabel } from '../dns-names';

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

/**
 * The errors of `config.api_base` (paths below `root`, e.g. `body/config`): when given, scheme, host and
 * port only (the adapter or its library appends the path, named by `appends`, e.g. `/v1/…`); `https://`
 * in live, `http://` allowed on loopback in sandbox (local doubles), and in live on a loopback host the
 * operator listed (`extraHosts`, PROVIDER_API_BASE_EXTRA_HOSTS: never in production).
 */
export function apiBaseErrors(
  config: Record<string, unknown>, sandbox: boolean, root: string, appends: string, extraHosts: readonly ExtraApiHost[] = [],
): SchemaFieldError[] {
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
    const loopback = LOOPBACK_HOSTS.has(url.hostname);
    if (!sandbox && !(loopback && isListed(extraHosts, apiBaseParts(value)))) return [{ path, message: 'must be https:// in live' }];
    if (!loopback) return [{ path, message: 'may be http:// only on loopback (sandbox)' }];
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

/** A host an operator lets live providers' api_base name (PROVIDER_API_BASE_EXTRA_HOSTS): any port unless it names one. */
export interface ExtraApiHost {
  host: string;
  port?: number;
}


/** `pattern` is a host, or `*` then a suffix: one DNS label, then the suffix (`*-checkout-live.adyenpayments.com`). */
export function hostMatches(pattern: string, host: string): boolean {
  if (!pattern.startsWith('*')) return pattern === host;
  const suffix = pattern.slice(1);
  return host.endsWith(suffix) && isDnsLabel(host.slice(0, -suffix.length));
}

/**
 * The errors of a live provider's `config.api_base` against the processor's own hosts (`ownHosts`, on
 * their https port) and the operator's `extraHosts`. No api_base: none (the adapter uses the processor's
 * own endpoint); one that is not a URL: none here (apiBaseErrors, checked first, says so).
 */
export function apiBaseHostErrors(
  config: Record<string, unknown>, ownHosts: readonly string[], extraHosts: readonly ExtraApiHost[], root: string,
): SchemaFieldError[] {
  if (typeof config.api_base !== 'string' || !URL.canParse(config.api_base)) return [];
  const { host, port } = apiBaseParts(config.api_base);
  if (port === 443 && ownHosts.some((pattern) => hostMatches(pattern, host))) return [];
  if (isListed(extraHosts, { host, port })) return [];
  const allowed = ownHosts.length ? ownHosts.join(', ') : 'none: this adapter reads no api_base';
  return [{
    path: `${root}/api_base`,
    message: `must be one of the processor's own hosts outside the sandbox (${allowed}) or one of PROVIDER_API_BASE_EXTRA_HOSTS`,
  }];
}

function isListed(extraHosts: readonly ExtraApiHost[], { host, port }: { host: string; port: number }): boolean {
  return extraHosts.some((extra) => extra.host === host && (extra.port === undefined || extra.port === port));
}

/**
 * PROVIDER_API_BASE_EXTRA_HOSTS (a comma list of `host` or `host:port`, e.g. an egress proxy), or why it is
 * not one. Hosts are compared as URLs spell them: lower case, IPv6 in brackets. In production a loopback
 * host is refused: it can only be a local double, and a live provider aimed at one approves what it says.
 */
export function parseExtraApiHosts(text: string | undefined, production: boolean): { hosts: ExtraApiHost[] } | { error: string } {
  const hosts: ExtraApiHost[] = [];
  for (const entry of (text ?? '').split(',').map((e) => e.trim()).filter(Boolean)) {
    let url: URL;
    try {
      url = new URL(`https://${entry}`);
    } catch {
      return { error: `: "${entry}" is not a host or host:port` };
    }
    // Anything beyond a host and port (a path, a user, a query) makes the URL's host differ from the entry.
    if (url.host !== entry.toLowerCase().replace(/:443$/, '')) return { error: `: "${entry}" is not a host or host:port` };
    const explicitPort = /:(\d+)$/.exec(entry)?.[1];
    hosts.push({ host: url.hostname, ...(explicitPort ? { port: Number(explicitPort) } : {}) });
  }
  const loopback = hosts.filter((h) => LOOPBACK_HOSTS.has(h.host) || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h.host));
  if (production && loopback.length) {
    return { error: `may not name a loopback host in production (a local double): ${loopback.map((h) => h.host).join(', ')}` };
  }
  return { hosts };
}
