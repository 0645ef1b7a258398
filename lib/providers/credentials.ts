// Provider configs' credentials (docs/providers-and-routing.md#payment-providers): checked against the
// JSON Schema each payment provider carries (`schemas.credentials`) with ajv, and shown masked. The
// schemas are data from the database, so they are compiled on demand and cached by content.

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

// ---------------------------------------------------------------------------------------------------
// How credentials are shown: which keys are set, never their values

const MASK = '••••';
/** Strings this long show their last 4 characters; shorter ones show nothing (never more than a third). */
const MASK_SHOW_LAST4_FROM = 12;
/** The sandbox simulator's knobs (docs/sandbox-processor.md#the-sandbox-processor-simulator): switches and numbers that are not secret, so they stay visible. */
const VISIBLE_CREDENTIAL_KEYS = new Set(['simulate']);

/**
 * The masked view of a provider config's credentials: keys are kept so a merchant can see what is set,
 * every string becomes `••••` (plus its last 4 characters when it is at least 12 long), and numbers and
 * booleans become `••••` too — except the scalar knobs under `simulate`, which are test switches.
 */
export function maskCredentials(credentials: Record<string, unknown>): Record<string, unknown> {
  return maskObject(credentials, false);
}

function maskObject(value: object, visible: boolean): Record<string, unknown> {
  return Object.fromEntries(Object.entries(value).map(([key, child]) => [key, mask(child, visible || VISIBLE_CREDENTIAL_KEYS.has(key))]));
}

function mask(value: unknown, visible: boolean): unknown {
  if (Array.isArray(value)) return value.map((item) => mask(item, visible));
  if (typeof value === 'object' && value !== null) return maskObject(value, visible);
  if (typeof value === 'string') return value.length >= MASK_SHOW_LAST4_FROM ? `${MASK}${value.slice(-4)}` : MASK;
  if (value === null) return null;
  return visible && (typeof value === 'number' || typeof value === 'boolean') ? value : MASK;
}
