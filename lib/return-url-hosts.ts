/**
 * Where a payment's return_url may send the customer's browser (docs/security.md §17): the account's
 * `return_url_hosts` setting, a list of host names, each exact (`shop.example.com`) or a wildcard of its
 * subdomains (`*.example.com`, which does not match `example.com` itself). An empty list allows any host
 * the scheme rule allows. Pure: the API validates with it, the 3-D Secure return checks it again.
 */

import { DNS_LABEL } from './dns-names';

/** The account setting's key in `core.account_settings` (its value: the hosts as a JSON array). */
export const RETURN_URL_HOSTS = 'return_url_hosts';

export const MAX_RETURN_URL_HOSTS = 50;

/** A host entry's shape, as the request schema declares it: lower-case labels, at least two, an optional `*.` first. */
export const HOST_ENTRY_PATTERN = `^(?:\\*\\.)?${DNS_LABEL}(?:\\.${DNS_LABEL})+$`;
const HOST = new RegExp(HOST_ENTRY_PATTERN);

/** Why a host entry cannot be stored, or undefined when it can (lower-case name, at least two labels, no scheme, port or path). */
export function hostEntryProblem(entry: string): string | undefined {
  if (entry.length > 253) return 'must be at most 253 characters';
  if (!HOST.test(entry)) return 'must be a lower-case host name such as shop.example.com or *.example.com (no scheme, port or path)';
  return undefined;
}

/** The stored setting's hosts (written only by the API, validated): none when the setting is absent. */
export function parseReturnUrlHosts(stored: string | undefined): string[] {
  if (stored === undefined) return [];
  try {
    const value: unknown = JSON.parse(stored);
    return Array.isArray(value) ? value.filter((h): h is string => typeof h === 'string') : [];
  } catch {
    return [];
  }
}

/** Whether `url`'s host is one the list allows (any, when the list is empty). */
export function returnUrlHostAllowed(hosts: readonly string[], url: URL): boolean {
  if (hosts.length === 0) return true;
  const host = url.hostname.toLowerCase();
  return hosts.some((entry) => (entry.startsWith('*.') ? host.endsWith(entry.slice(1)) : host === entry));
}
