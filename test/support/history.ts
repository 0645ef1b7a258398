/** Every string and byte array in a value (a workflow history, payloads decoded), for searching as text. */
export function flatten(value: unknown, out: string[] = []): string[] {
  if (value === null || value === undefined) return out;
  if (typeof value === 'string') out.push(value);
  else if (value instanceof Uint8Array) out.push(Buffer.from(value).toString('utf8'));
  else if (Array.isArray(value)) for (const v of value) flatten(v, out);
  else if (typeof value === 'object') for (const v of Object.values(value)) flatten(v, out);
  else out.push(String(value));
  return out;
}
