import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isBlockedAddress } from '../../lib/webhook-url';

/**
 * The DNS side of the webhook URL policy (lib/webhook-url.ts): resolving a host when a URL is saved,
 * and refusing blocked addresses again at connect time, so a DNS answer that changes later (rebinding)
 * cannot reach a refused address either.
 */

/** Every address a host name resolves to (the resolver `webhookUrlProblem` checks a saved URL with). */
export async function resolveHost(host: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    dnsLookup(host, { all: true, verbatim: true }, (err, addresses) => (err ? reject(err) : resolve(addresses.map((a) => a.address))));
  });
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for net/tls.connect (undici's `connect` options) that refuses blocked addresses, so the
 * address checked is the address connected to. Handles both the single-answer and `all` forms.
 */
export function guardedLookup(allowPrivate: boolean, lookup: typeof dnsLookup = dnsLookup) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    lookup(hostname, { ...options, all: true }, (err, addresses) => {
      // A name that does not resolve and one that resolves only to refused addresses fail alike: the
      // attempt's error, which the merchant reads, must not tell which internal names our resolver knows.
      const refused = () => callback(
        Object.assign(new Error(`${hostname} does not resolve to a public address`), { code: 'EADDRNOTALLOWED' }), options.all ? [] : '', undefined,
      );
      if (err) return allowPrivate ? callback(err, options.all ? [] : '', undefined) : refused();
      const allowed = allowPrivate ? addresses : addresses.filter((a) => !isBlockedAddress(a.address));
      if (!allowed.length) return refused();
      if (options.all) return callback(null, allowed);
      return callback(null, allowed[0].address, allowed[0].family);
    });
  };
}
