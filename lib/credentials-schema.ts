// Provider credentials schemas (docs/providers-and-routing.md#payment-providers): each payment provider carries a JSON Schema
// (`schemas.credentials`) that the credentials of its provider configs are validated against with ajv.
// The schemas are data from the database, so they are compiled on demand and cached by content.

import Ajv, { ErrorObject, ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import stableStringify from 'fast-json-stable-stringify';
import { LRUCache } from 'lru-cache';

export interface SchemaFieldError {
  path: string;
  message: string;
}

export type CompiledSchema = { ok: true; validate: ValidateFunction } | { ok: false; error: string };

// One Ajv per schema: schemas from different providers may reuse an `$id`, which one shared Ajv refuses.
const compiled = new LRUCache<string, CompiledSchema>({ max: 500 });

/** Compiles a credentials schema, or says why it is not one (not an object, async, unresolvable `$ref`, …). */
export function compileCredentialsSchema(schema: unknown): CompiledSchema {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
    return { ok: false, error: 'must be a JSON Schema object' };
  }
  const key = stableStringify(schema);
  const cached = compiled.get(key);
  if (cached) return cached;
  let result: CompiledSchema;
  if ((schema as { $async?: unknown }).$async) {
    result = { ok: false, error: 'must not be an $async schema' };
  } else {
    try {
      const ajv = addFormats(new Ajv({ allErrors: true, strict: false, coerceTypes: false, useDefaults: false }));
      result = { ok: true, validate: ajv.compile(structuredClone(schema)) };
    } catch (err) {
      result = { ok: false, error: `is not a valid JSON Schema: ${(err as Error).message}` };
    }
  }
  compiled.set(key, result);
  return result;
}

/**
 * The field errors of `value` against a compiled schema, with paths below `root` (e.g.
 * `body/credentials/api_key`). Messages name the rule broken, never the value sent: the value is secret.
 */
export function credentialsErrors(validate: ValidateFunction, value: unknown, root: string): SchemaFieldError[] {
  if (validate(value)) return [];
  return (validate.errors ?? []).map((e: ErrorObject) => {
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
