/** An unpaired UTF-16 surrogate: in Unicode mode a well-formed pair is one code point, outside `\p{Cs}`. */
const LONE_SURROGATE = /\p{Cs}/gu;

/** Whether `text` holds an unpaired surrogate (what `String.prototype.isWellFormed` tells, from Node 20). */
export const hasLoneSurrogate = (text: string): boolean => /\p{Cs}/u.test(text);

/**
 * A JSON value with U+0000 and every unpaired surrogate, in strings and object keys alike, replaced by
 * U+FFFD. Postgres stores neither in `jsonb` and no U+0000 in `text` (a lone surrogate becomes U+FFFD
 * there anyway). For what we must keep however it came, a processor's signed event: refused, it would be
 * sent again and again and never stored. A request with them is refused (docs/api-conventions.md#validation).
 */
export function storableJson<T>(value: T): T {
  if (typeof value === 'string') return value.replaceAll('\u0000', '\ufffd').replace(LONE_SURROGATE, '\ufffd') as T;
  if (Array.isArray(value)) return value.map(storableJson) as T;
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [storableJson(key), storableJson(item)])) as T;
}
