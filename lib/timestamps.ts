/** The API's form of a timestamp: ISO-8601, UTC, milliseconds (`Date.prototype.toISOString`'s). */
const API_FORM = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** A timestamp as the API and webhooks show it: ISO-8601 UTC with milliseconds; null stays null. */
export function iso(value: Date | string | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  // Already in that form (a row read with its timestamps as text, db/knex.ts): as it is.
  if (typeof value === 'string' && API_FORM.test(value)) return value;
  return (value instanceof Date ? value : new Date(value)).toISOString();
}

/**
 * Postgres's text of a timestamptz in UTC: `2026-11-25 20:15:12.646055+00` as a column's text (DateStyle
 * ISO), `2026-11-25T20:15:12.646055+00:00` inside JSON (`row_to_json`); the fraction optional.
 */
const POSTGRES_UTC = /^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?\+00(?::00)?$/;

/**
 * Postgres's text of a UTC timestamptz in the API's form, without a Date in between: the fraction cut to
 * milliseconds, as a Date holds it. Undefined for any other text (another session time zone, a year
 * beyond four digits, BC, infinity): the caller parses those the usual way.
 */
export function isoFromPostgresUtc(text: string): string | undefined {
  const match = POSTGRES_UTC.exec(text);
  if (!match) return undefined;
  const fraction = match[3] === undefined ? '000' : `${match[3]}00`.slice(0, 3);
  return `${match[1]}T${match[2]}.${fraction}Z`;
}

/**
 * A timestamptz from Postgres's JSON (`row_to_json`) in the API's form: straight from its text when the
 * session is in UTC, through a Date otherwise (another offset, which a Date reads exactly).
 */
export function isoFromJsonTimestamp(text: string): string {
  return isoFromPostgresUtc(text) ?? new Date(text).toISOString();
}
