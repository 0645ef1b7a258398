import { lookup as dnsLookup, promises as dns, type LookupAddress, type LookupOptions } from 'node:dns';
import { isBlockedAddress } from '../lib/webhook-url';

/**
 * The DNS side of the webhook URL policy (lib/webhook-url.ts): resolving a host when a URL is saved,
 * and refusing blocked addresses again at connect time, so a DNS answer that changes later (rebinding)
 * cannot reach a refused address either.
 *
 * Merchants choose these names, so their lookups are bounded and kept off shared resources: with private
 * addresses refused (production) a name is resolved by c-ares over the network — A and AAAA, at most
 * 2 s per try (`WEBHOOK_DNS_TIMEOUT_MS`), two tries — not by the system's getaddrinfo, which runs on libuv's
 * pool of four threads for as long as the system resolver waits (about ten seconds per name whose servers
 * do not answer) and would hold up the process's file writes (its logs), compression and every other
 * lookup meanwhile. It also skips /etc/hosts, whose names are the machine's own. With private addresses
 * allowed (development) names resolve as everywhere else on the machine, `localhost` included.
 */

/** Every address a host name resolves to; rejects when it resolves to none. */
export type HostResolver = (host: string) => Promise<LookupAddress[]>;

const WEBHOOK_DNS_TIMEOUT_MS = 2_000;

/** c-ares, bounded: `servers` defaults to the system's (/etc/resolv.conf). */
export function networkResolver({ timeoutMs = WEBHOOK_DNS_TIMEOUT_MS, tries = 2, servers }: { timeoutMs?: number; tries?: number; servers?: string[] } = {}): HostResolver {
  const resolver = new dns.Resolver({ timeout: timeoutMs, tries });
  if (servers) resolver.setServers(servers);
  return async (host) => {
    const [v4, v6] = await Promise.allSettled([resolver.resolve4(host), resolver.resolve6(host)]);
    const addresses: LookupAddress[] = [
      ...(v4.status === 'fulfilled' ? v4.value.map((address) => ({ address, family: 4 })) : []),
      ...(v6.status === 'fulfilled' ? v6.value.map((address) => ({ address, family: 6 })) : []),
    ];
    if (!addresses.length) throw v4.status === 'rejected' ? v4.reason : Object.assign(new Error(`${host} has no addresses`), { code: 'ENODATA' });
    return addresses;
  };
}

/** The system's getaddrinfo, as net.connect would resolve (development: /etc/hosts, `localhost`). */
const systemResolver: HostResolver = (host) => new Promise((resolve, reject) => {
  dnsLookup(host, { all: true, verbatim: true }, (err, addresses) => (err ? reject(err) : resolve(addresses)));
});

let network: HostResolver | undefined;
/** The resolver webhook hosts are looked up with under a policy (one c-ares channel per process). */
export function webhookResolver(allowPrivate: boolean): HostResolver {
  if (allowPrivate) return systemResolver;
  network ??= networkResolver();
  return network;
}

/** Every address a host name resolves to (the resolver `webhookUrlProblem` checks a saved URL with). */
export function hostResolver(allowPrivate: boolean): (host: string) => Promise<string[]> {
  const resolve = webhookResolver(allowPrivate);
  return async (host) => (await resolve(host)).map((a) => a.address);
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for net/tls.connect (undici's `connect` options) that refuses blocked addresses, so the
 * address checked is the address connected to. Handles both the single-answer and `all` forms.
 */
export function guardedLookup(allowPrivate: boolean, resolve: HostResolver = webhookResolver(allowPrivate)) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    // A name that does not resolve and one that resolves only to refused addresses fail alike: the
    // attempt's error, which the merchant reads, must not tell which internal names our resolver knows.
    const refused = () => callback(
      Object.assign(new Error(`${hostname} does not resolve to a public address`), { code: 'EADDRNOTALLOWED' }), options.all ? [] : '', undefined,
    );
    resolve(hostname).then((addresses) => {
      const ofFamily = options.family === 4 || options.family === 6 ? addresses.filter((a) => a.family === options.family) : addresses;
      const allowed = allowPrivate ? ofFamily : ofFamily.filter((a) => !isBlockedAddress(a.address));
      if (!allowed.length) return refused();
      if (options.all) return callback(null, allowed);
      return callback(null, allowed[0].address, allowed[0].family);
    }, (err: NodeJS.ErrnoException) => (allowPrivate ? callback(err, options.all ? [] : '', undefined) : refused()));
  };
}
