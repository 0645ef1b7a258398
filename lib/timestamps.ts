/** A timestamp as the API and webhooks show it: ISO-8601 UTC with milliseconds; null stays null. */
export function iso(value: Date | string | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  return (value instanceof Date ? value : new Date(value)).toISOString();
}
