/** Whether `text` holds an unpaired UTF-16 surrogate. */
export const hasLoneSurrogate = (text: string): boolean => !text.isWellFormed();

/**
 * A JSON value with U+0000 and every unpaired surrogate, in strings and object keys alike, replaced by
 * U+FFFD. Postgres stores neither in `jsonb` and no U+0000 in `text` (a lone surrogate becomes U+FFFD
 * there anyway). For what we must keep however it came, a processor's signed event: refused, it would be
 * sent again and again and never stored. A request with them is refused (docs/api-conventions.md#validation).
 */
export function storableJson<T>(value: T): T {
  if (typeof value === 'string') return value.replaceAll('\u0000', '\ufffd').toWellFormed() as T;
  if (Array.isArray(value)) return value.map(storableJson) as T;
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [storableJson(key), storableJson(item)])) as T;
}
