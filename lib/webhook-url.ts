import ipaddr from 'ipaddr.js';

/**
 * Where Switchboard may POST webhooks. Unless WEBHOOK_ALLOW_PRIVATE is on, only global unicast
 * addresses are allowed (SSRF: a merchant must not make our worker call our own network), and live
 * endpoints must use https. The check runs when a URL is saved, and again on every connection
 * (`guardedLookup` and `postWebhook` in activities/webhooks/, for literal addresses too), so a DNS
 * answer that changes later (rebinding) cannot reach a refused address either. Pure: resolving host
 * names is the caller's, handed in as `UrlPolicy.resolve`.
 *
 * Addresses are classified by ipaddr.js, whose ranges follow the IANA IPv4 and IPv6 Special-Purpose
 * Address Registries: anything it does not call `unicast` (private, loopback, link-local, shared
 * address space, documentation, benchmarking, reserved, multicast, broadcast, AS112, AMT, ORCHID, SRv6,
 * discard, …) is refused.
 */

/**
 * 4, 6, or 0 when `text` is not an IP address, with node:net's `isIP` grammar (dotted-quad IPv4 only —
 * ipaddr.js's general parser would also take `1.2.3` or `0x7f.1` — and IPv6 with an optional zone),
 * from ipaddr.js so that lib/ imports no Node module.
 */
export function isIP(text: string): 0 | 4 | 6 {
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) return 4;
  return ipaddr.IPv6.isValid(text) ? 6 : 0;
}

/** IANA special-purpose ranges ipaddr.js does not know yet (RFC 9780: the dummy IPv6 prefix). */
const NOT_IN_IPADDR: [ipaddr.IPv6, number][] = [ipaddr.IPv6.parseCIDR('100:0:0:1::/64')];

const NAT64_WELL_KNOWN = ipaddr.IPv6.parseCIDR('64:ff9b::/96');

/**
 * The IPv4 address an IPv6 address delivers to, for the forms that carry one in their last 32 bits:
 * IPv4-mapped (::ffff:0:0/96), IPv4-translated (::ffff:0:0:0/96), IPv4-compatible (::/96, deprecated)
 * and the NAT64 well-known prefix (64:ff9b::/96, what DNS64 answers for IPv4-only hosts). Those are
 * judged by that IPv4 address. 6to4 (2002::/16), Teredo (2001::/32) and the local-use NAT64 prefix
 * (64:ff9b:1::/48) are not in this list: they are tunnelling or network-specific forms whose embedded
 * address names a relay (or is obfuscated), so they are refused whatever they embed.
 */
function embeddedIPv4(address: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const range = address.range();
  const compatible = address.parts.slice(0, 6).every((part) => part === 0);
  if (range !== 'ipv4Mapped' && range !== 'rfc6145' && !compatible && !address.match(NAT64_WELL_KNOWN)) return undefined;
  const [a, b] = address.parts.slice(6);
  return new ipaddr.IPv4([a >> 8, a & 0xff, b >> 8, b & 0xff]);
}

/** True for an address webhooks must not reach: anything but a global unicast address (see above). */
export function isBlockedAddress(address: string): boolean {
  // `isIP` decides what is an address (ipaddr.js would also take forms like `1.2.3`).
  if (isIP(address) === 0) return true;
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address);
  } catch {
    return true;
  }
  if (parsed.kind() === 'ipv6') {
    const v6 = parsed as ipaddr.IPv6;
    if (NOT_IN_IPADDR.some((cidr) => v6.match(cidr))) return true;
    parsed = embeddedIPv4(v6) ?? v6;
  }
  return parsed.range() !== 'unicast';
}

export interface UrlPolicy {
  /** Live endpoints must be https. */
  live: boolean;
  allowPrivate: boolean;
  /**
   * Resolves a host name to its addresses (net/webhook-dns.ts `hostResolver`; tests hand in
   * their own). Needed for host names only: literal addresses are judged as they are.
   */
  resolve?: (host: string) => Promise<string[]>;
}

const MAX_URL_LENGTH = 2048;

/**
 * True when the URL's host is a literal IP address that is refused. Literal addresses skip DNS, so
 * `guardedLookup` never sees them: saving a URL and every delivery check them with this.
 */
export function refusesLiteralHost(url: URL, allowPrivate: boolean): boolean {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return !allowPrivate && isIP(host) !== 0 && isBlockedAddress(host);
}

const REFUSED = 'must not point at a private, loopback, link-local or otherwise non-public address';

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
  if (refusesLiteralHost(url, false)) return REFUSED;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) return null;
  if (!policy.resolve) throw new Error('webhookUrlProblem needs policy.resolve to judge a host name');
  // One answer whether the name does not resolve or resolves to a private address: two would tell a
  // merchant which internal names the API's resolver knows.
  const addresses = await policy.resolve(host).catch((): string[] => []);
  if (!addresses.length || addresses.some(isBlockedAddress)) return `host ${host} must resolve to public addresses only`;
  return null;
}
