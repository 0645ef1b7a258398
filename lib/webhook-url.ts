import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';

/**
 * Where Switchboard may POST webhooks. Private, loopback, link-local and other non-public addresses
 * are refused in both environments (SSRF: a merchant must not make our worker call our own network)
 * unless WEBHOOK_ALLOW_PRIVATE is on; live endpoints must use https. The check runs when a URL is
 * saved, and again on every connection (`guardedLookup`), so a DNS answer that changes later
 * (rebinding) cannot reach a private address either.
 */
const BLOCKED = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24],
  ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) BLOCKED.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128], ['::1', 128], ['64:ff9b:1::', 48], ['100::', 64], ['2001:db8::', 32],
  ['fc00::', 7], ['fe80::', 10], ['ff00::', 8],
] as const) BLOCKED.addSubnet(net, prefix, 'ipv6');
// IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) are matched against the IPv4 rules by BlockList itself.

/** True for an address webhooks must not reach: private, loopback, link-local, reserved, multicast. */
export function isBlockedAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  return BLOCKED.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

export interface UrlPolicy {
  /** Live endpoints must be https. */
  live: boolean;
  allowPrivate: boolean;
  /** Resolves a host name to its addresses (node:dns by default; tests may hand in another). */
  resolve?: (host: string) => Promise<string[]>;
}

const MAX_URL_LENGTH = 2048;

async function resolveAll(host: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    dnsLookup(host, { all: true, verbatim: true }, (err, addresses) => (err ? reject(err) : resolve(addresses.map((a) => a.address))));
  });
}

/** Why a URL cannot be a webhook endpoint, or null when it can. */
export async function webhookUrlProblem(raw: string, policy: UrlPolicy): Promise<string | null> {
  if (raw.length > MAX_URL_LENGTH) return `must be at most ${MAX_URL_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'is not a valid absolute URL';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must be an http(s) URL';
  if (url.username || url.password) return 'must not carry credentials';
  if (url.protocol === 'http:' && policy.live && !policy.allowPrivate) return 'must use https for a live endpoint';
  if (policy.allowPrivate) return null;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) return isBlockedAddress(host) ? 'must not point at a private, loopback or link-local address' : null;
  let addresses: string[];
  try {
    addresses = await (policy.resolve ?? resolveAll)(host);
  } catch {
    return `host ${host} does not resolve`;
  }
  if (!addresses.length) return `host ${host} does not resolve`;
  if (addresses.some(isBlockedAddress)) return 'must not resolve to a private, loopback or link-local address';
  return null;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for net/tls.connect (undici's `connect` options) that refuses blocked addresses, so the
 * address checked is the address connected to. Handles both the single-answer and `all` forms.
 */
export function guardedLookup(allowPrivate: boolean) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, options.all ? [] : '', undefined);
      const allowed = allowPrivate ? addresses : addresses.filter((a) => !isBlockedAddress(a.address));
      if (!allowed.length) {
        const refused = Object.assign(new Error(`${hostname} resolves only to private or reserved addresses`), { code: 'EADDRNOTALLOWED' });
        return callback(refused, options.all ? [] : '', undefined);
      }
      if (options.all) return callback(null, allowed);
      return callback(null, allowed[0].address, allowed[0].family);
    });
  };
}
