import Ajv, { ErrorObject, ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { TSchema } from '@sinclair/typebox';
import { ApiError, FieldError } from './errors';

// Bodies are validated exactly as sent; query strings and path params arrive as text and are coerced.
const bodyAjv = addFormats(new Ajv({ allErrors: true, strict: false, coerceTypes: false }));
const queryAjv = addFormats(new Ajv({ allErrors: true, strict: false, coerceTypes: true }));

function toFieldErrors(errors: ErrorObject[], root: string): FieldError[] {
  return errors.map((e) => {
    const base = `${root}${e.instancePath}`;
    if (e.keyword === 'additionalProperties') {
      return { path: `${base}/${(e.params as { additionalProperty: string }).additionalProperty}`, message: 'is not a known field' };
    }
    if (e.keyword === 'required') {
      return { path: `${base}/${(e.params as { missingProperty: string }).missingProperty}`, message: 'is required' };
    }
    return { path: base, message: e.message ?? 'is not valid' };
  });
}

export interface Validator<T> { (value: unknown): T }

/** Postgres text and jsonb cannot hold U+0000: such input is invalid, not a 500 when it reaches a query. */
function nulCharacterAt(value: unknown, path: string): string | undefined {
  if (typeof value === 'string') return value.includes('\u0000') ? path : undefined;
  if (value === null || typeof value !== 'object') return undefined;
  for (const [key, item] of Object.entries(value)) {
    const itemPath = `${path}/${key.split('\u0000').join('\\u0000')}`;
    if (key.includes('\u0000')) return itemPath;
    const found = nulCharacterAt(item, itemPath);
    if (found) return found;
  }
  return undefined;
}

function compile<T>(ajv: Ajv, schema: TSchema, root: string): Validator<T> {
  const validate: ValidateFunction = ajv.compile(schema);
  return (value: unknown): T => {
    if (validate(value)) {
      const nul = nulCharacterAt(value, root);
      if (nul) throw ApiError.validation([{ path: nul, message: 'must not contain the NUL character (\\u0000)' }]);
      return value as T;
    }
    const errors = validate.errors ?? [];
    const fields = toFieldErrors(errors, root);
    const unknown = errors.some((e) => e.keyword === 'additionalProperties');
    throw ApiError.validation(fields, unknown ? 'unknown_field' : 'validation_failed');
  };
}

export const bodyValidator = <T>(schema: TSchema): Validator<T> => compile<T>(bodyAjv, schema, 'body');
export const queryValidator = <T>(schema: TSchema): Validator<T> => compile<T>(queryAjv, schema, 'query');
export const paramsValidator = <T>(schema: TSchema): Validator<T> => compile<T>(queryAjv, schema, 'path');
