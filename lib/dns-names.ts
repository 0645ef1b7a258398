// The shape of one DNS label as hosts we store and match are written: lower case, letters, digits and
// inner hyphens, at most 63 characters (RFC 1035 §2.3.1, lower-cased).

/** One label, as a regular expression source to build host patterns from. */
export const DNS_LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';

const ONE_LABEL = new RegExp(`^${DNS_LABEL}$`);

/** Whether `text` is exactly one DNS label. */
export function isDnsLabel(text: string): boolean {
  return ONE_LABEL.test(text);
}
