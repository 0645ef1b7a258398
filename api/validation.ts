import Ajv, { ErrorObject, ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { TSchema } from '@sinclair/typebox';
import { ApiError, FieldError } from './errors';
import { hasLoneSurrogate } from '../lib/storable-text';
import { GRAMMAR_SCHEMAS, NO_NUL, requestSchema, SHARED_SCHEMAS, WELL_FORMED } from '../resources/schemas';

// Bodies are validated exactly as sent; query strings and path params arrive as text and are coerced.
// `verbose` gives each error its schema, to tell an unknown request field from a word outside a grammar.
const options = { allErrors: true, strict: false, verbose: true, schemas: [...SHARED_SCHEMAS] };
const bodyAjv = addFormats(new Ajv({ ...options, coerceTypes: false }));
const queryAjv = addFormats(new Ajv({ ...options, coerceTypes: true }));
// No unpaired surrogate (resources/schemas.ts WELL_FORMED).
for (const ajv of [bodyAjv, queryAjv]) {
  ajv.addKeyword({ keyword: WELL_FORMED, type: 'string', schemaType: 'boolean', validate: (on: boolean, data: string) => !on || !hasLoneSurrogate(data) });
}

const NUL_MESSAGE = 'must not contain the NUL character (\\u0000) or an unpaired surrogate (\\ud800–\\udfff)';

/** A path segment as the error shows it: a NUL character or an unpaired surrogate written out, so paths stay printable. */
const printable = (segment: string) => segment.split('\u0000').join('\\u0000').replace(/\p{Cs}/gu, (c) => `\\u${c.charCodeAt(0).toString(16)}`);

function messageOf(e: ErrorObject): string {
  if (e.keyword === WELL_FORMED || (e.keyword === 'pattern' && (e.params as { pattern?: string }).pattern === NO_NUL)) return NUL_MESSAGE;
  // ajv's own words omit the value a constant must have; the caller needs it to fix the request.
  if (e.keyword === 'const') return `must be ${JSON.stringify((e.params as { allowedValue?: unknown }).allowedValue)}`;
  return e.message ?? 'is not valid';
}

/** A rule across fields (resources/schemas.ts `ExactlyOne`, `OnlyWhen`) says what breaking it means in `x-error`. */
const ruleMessage = (e: ErrorObject): string | undefined => {
  const parent = e.parentSchema as Record<string, unknown> | undefined;
  return typeof parent?.['x-error'] === 'string' ? parent['x-error'] : undefined;
};

function toFieldErrors(errors: ErrorObject[], root: string): FieldError[] {
  // A broken rule is one error: the failures of its branches (oneOf's `required`s) are not the story.
  const rules = errors.filter((e) => ruleMessage(e) && ['oneOf', 'anyOf', 'not'].includes(e.keyword)).map((e) => `${e.schemaPath}/`);
  const out: FieldError[] = [];
  for (const e of errors) {
    if (e.keyword === 'if' || rules.some((r) => e.schemaPath.startsWith(r))) continue;
    const base = printable(`${root}${e.instancePath}`);
    const rule = ruleMessage(e);
    if (e.keyword === 'additionalProperties') {
      const grammar = GRAMMAR_SCHEMAS.has(e.parentSchema as object);
      out.push({ path: `${base}/${printable((e.params as { additionalProperty: string }).additionalProperty)}`, message: grammar ? 'is not a field, operator or combinator allowed here' : 'is not a known field' });
    } else if (e.keyword === 'required') {
      out.push({ path: `${base}/${(e.params as { missingProperty: string }).missingProperty}`, message: rule ?? 'is required' });
    } else if (e.keyword === 'not' && rule) {
      // `not: { required: [field] }`: the field is the one not allowed.
      const forbidden = ((e.parentSchema as { not?: { required?: string[] } }).not?.required ?? []);
      out.push({ path: forbidden.length === 1 ? `${base}/${forbidden[0]}` : base, message: rule });
    } else if (e.keyword === 'propertyNames') {
      // The key itself is wrong: the path names it, the message is the key's own error (reported alongside).
      const name = (e.params as { propertyName: string }).propertyName;
      const cause = errors.find((c) => c.propertyName === name && c.instancePath === e.instancePath && c.keyword !== 'propertyNames');
      out.push({ path: `${base}/${printable(name)}`, message: cause ? `key ${messageOf(cause)}` : 'is not a valid key' });
    } else if (e.propertyName === undefined) {
      out.push({ path: base, message: rule ?? messageOf(e) });
    }
  }
  return out;
}

/** A validator, and the schema it validates with (which the OpenAPI document shows). */
export interface Validator<T> { (value: unknown): T; readonly schema: TSchema }

/**
 * The NUL rule is part of every schema (requestSchema); this walk stays as a backstop for a string
 * pattern of a route's own that would let U+0000 through.
 */
function nulCharacterAt(value: unknown, path: string): string | undefined {
  if (typeof value === 'string') return value.includes('\u0000') ? path : undefined;
  if (value === null || typeof value !== 'object') return undefined;
  for (const [key, item] of Object.entries(value)) {
    // The path is written out only for a key or value that holds a NUL, not for every field of every request.
    if (key.includes('\u0000')) return `${path}/${printable(key)}`;
    if (typeof item === 'string' ? !item.includes('\u0000') : item === null || typeof item !== 'object') continue;
    const found = nulCharacterAt(item, `${path}/${key}`);
    if (found) return found;
  }
  return undefined;
}

function compile<T>(ajv: Ajv, routeSchema: TSchema, root: string): Validator<T> {
  const schema = requestSchema(routeSchema);
  const validate: ValidateFunction = ajv.compile(schema);
  const validator = (value: unknown): T => {
    if (validate(value)) {
      const nul = nulCharacterAt(value, root);
      if (nul) throw ApiError.validation([{ path: nul, message: NUL_MESSAGE }]);
      return value as T;
    }
    const errors = validate.errors ?? [];
    const fields = toFieldErrors(errors, root);
    const unknown = errors.some((e) => e.keyword === 'additionalProperties' && !GRAMMAR_SCHEMAS.has(e.parentSchema as object));
    throw ApiError.validation(fields, unknown ? 'unknown_field' : 'validation_failed');
  };
  return Object.assign(validator, { schema });
}

export const bodyValidator = <T>(schema: TSchema): Validator<T> => compile<T>(bodyAjv, schema, 'body');
export const queryValidator = <T>(schema: TSchema): Validator<T> => compile<T>(queryAjv, schema, 'query');
export const paramsValidator = <T>(schema: TSchema): Validator<T> => compile<T>(queryAjv, schema, 'path');

/**
 * A request's `date-time` as a Date. The format (RFC 3339) takes a leap second, `23:59:60`, which no Date
 * holds: `new Date` gives an Invalid Date, which every comparison calls false and Postgres refuses (a
 * 500). Such a time is a 400 at its path.
 */
export function requestTime(value: string, path: string): Date {
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) throw ApiError.validation([{ path, message: 'is not a time that exists' }]);
  // An offset can carry 9999-12-31 past the year 9999, which our answers could not write back in the same form.
  if (date.getUTCFullYear() > 9999) throw ApiError.validation([{ path, message: 'must be before the year 10000 (UTC)' }]);
  return date;
}
