import { TLiteral, TObject, TProperties, TSchema, Type } from '@sinclair/typebox';
import {
  COMBINATORS, FIELDS, FieldKind, LISTS, MAX_DEPTH, METADATA_KEY_MAX, METADATA_PREFIX, OPERATORS, ORDERING, VALUE_FORMATS,
} from '../lib/routing/conditions';

/**
 * Building blocks shared by the route schemas. Every request schema is closed
 * (additionalProperties: false) except free-form objects such as metadata.
 */
export const Obj = <T extends Parameters<typeof Type.Object>[0]>(props: T, options: object = {}) =>
  Type.Object(props, { additionalProperties: false, ...options });

export const Id = (prefix?: string) =>
  Type.String({ minLength: 1, maxLength: 100, ...(prefix ? { pattern: `^${prefix}_[0-9A-Za-z]+$` } : {}) });

export const Currency = Type.String({ pattern: '^[A-Z]{3}$', description: 'ISO-4217, upper case' });
export const Country = Type.String({ pattern: '^[A-Z]{2}$', description: 'ISO-3166 alpha-2, upper case' });
export const Amount = Type.Integer({ minimum: 1, maximum: 99_999_999, description: 'minor units' });
export const Timestamp = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);

/** metadata: ≤ 50 keys, keys ≤ 40 chars, string values ≤ 500 chars. */
export const Metadata = Type.Record(Type.String(), Type.String({ maxLength: 500 }), {
  maxProperties: 50,
  // Record keys' own constraints are not carried into the JSON Schema; propertyNames is.
  propertyNames: { minLength: 1, maxLength: 40 },
  description: 'Free-form string pairs: at most 50 keys of 40 characters, values of 500.',
});

/** Free-form JSON object (credentials, capabilities, schemas, …): open by design. */
export const FreeForm = Type.Object({}, { additionalProperties: true });

export const QueryBool = Type.Boolean();

/**
 * The deepest page a list takes: the offset, (page - 1) × limit, stays a safe integer. Unbounded, a huge
 * page overflowed Postgres' bigint (500), and from 1e21 on knex read the offset with parseInt as 1.
 */
export const MAX_PAGE = 1_000_000;

/** page 1–MAX_PAGE (default 1), limit 1–100 (default 10); anything else is a 400. */
export const Pagination = {
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE, default: 1 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 10 })),
};

/** A response resource: documented fields, open to extra ones. */
export const Resource = <O extends string, P extends TProperties>(object: O, props: P): TObject<{ object: TLiteral<O> } & P> =>
  Type.Object({ object: Type.Literal(object), ...props }, { additionalProperties: true });

export type Schema = TSchema;

/**
 * Rules across fields, declared in the schema so that the document states them (`x-error` is the
 * message a request that breaks one gets; api/validation.ts reads it). Put them in `allOf`.
 */
export const ExactlyOne = (a: string, b: string) => ({
  'x-error': `give exactly one of ${a} and ${b}`,
  oneOf: [{ required: [a] }, { required: [b] }],
});

/** `field` is required when `other` is `value`, and not allowed otherwise. */
export const OnlyWhen = (field: string, other: string, value: string) => ({
  if: { properties: { [other]: { const: value } }, required: [other] },
  // `properties` only names the field where it is required or refused (its schema is the object's own).
  then: { 'x-error': `is required when ${other} is ${value}`, properties: { [field]: {} }, required: [field] },
  else: { 'x-error': `is only allowed with ${other} ${value}`, not: { properties: { [field]: {} }, required: [field] } },
});

/** `field` is required whenever `other` is given. */
export const RequiredWith = (field: string, other: string) => ({
  if: { required: [other] },
  then: { 'x-error': `is required with ${other}`, properties: { [field]: {} }, required: [field] },
});

// ---------------------------------------------------------------------------------------------------
// Rules every request schema carries (applied by `requestSchema`, which validation compiles and the
// OpenAPI document shows, so the two can never disagree).

/**
 * No request string and no object key may contain U+0000 or an unpaired UTF-16 surrogate (`"\ud800"`
 * escaped in JSON): Postgres cannot store the first in text or jsonb, refuses the second in jsonb and
 * turns it into U+FFFD in text (two different ids then name one row). Two rules, declared together on
 * every string schema that has no pattern, format, const or enum of its own (those exclude both already:
 * the patterns are character classes without them, and the formats used, email, date-time and uri, have
 * no place for them; a pattern on top of a format also made Schemathesis' coverage phase take half a
 * minute for one operation), and on the `propertyNames` of every object open to other keys:
 *
 * * `pattern: NO_NUL`;
 * * `x-well-formed: true` (WELL_FORMED), our own keyword, which ajv checks (api/validation.ts). A
 *   pattern excluding the surrogate range says the same in JavaScript's Unicode mode, but generators
 *   that build strings from patterns in UTF-8 (Hypothesis, under Schemathesis) cannot use such a
 *   pattern at all, and then fuzz as if the string had none.
 */
export const NO_NUL = '^[^\\u0000]*$';
export const WELL_FORMED = 'x-well-formed';

/**
 * How deep a request body may nest (objects and arrays, the body itself counting as 1). Every
 * declared shape fits with room to spare; only free-form values (JsonValue) can reach it.
 */
export const MAX_BODY_DEPTH = 64;

/** Schemas referenced by name (`$ref: '<$id>'`): registered with ajv and listed in the document's components. */
const shared: TSchema[] = [];
const named = (schema: Record<string, unknown>): TSchema => {
  const s = schema as TSchema;
  shared.push(s);
  return s;
};
const ref = (id: string) => ({ $ref: id });

/** A free-form value: any JSON, its strings and keys without U+0000. */
named({
  $id: 'JsonValue',
  description: `Any JSON value whose strings and object keys contain neither U+0000 nor an unpaired surrogate, nested at most ${MAX_BODY_DEPTH} levels deep counting from the request body.`,
  pattern: NO_NUL,
  [WELL_FORMED]: true,
  propertyNames: { pattern: NO_NUL, [WELL_FORMED]: true },
  items: ref('JsonValue'),
  additionalProperties: ref('JsonValue'),
});

// The routing-rule condition grammar (lib/routing/conditions.ts), as exactly as JSON Schema allows:
// one schema per nesting level (a combinator's members are one level deeper, at most MAX_DEPTH).

const OPERATOR_SCHEMAS: Record<FieldKind, string> = {
  number: 'NumberOperators', currency: 'CurrencyOperators', country: 'CountryOperators', network: 'NetworkOperators', text: 'TextOperators',
};
for (const [kind, id] of Object.entries(OPERATOR_SCHEMAS) as [FieldKind, string][]) {
  const operand = kind === 'number'
    ? { type: 'integer' }
    : { type: 'string', ...(kind === 'text' ? { pattern: NO_NUL, [WELL_FORMED]: true } : { pattern: VALUE_FORMATS[kind].pattern.source }), description: VALUE_FORMATS[kind].describe };
  const operators = OPERATORS.filter((op) => kind === 'number' || !ORDERING.has(op));
  named({
    $id: id,
    type: 'object',
    description: `Operators on a ${kind === 'text' ? 'metadata' : kind} field (at least one; all must hold).`,
    minProperties: 1,
    additionalProperties: false,
    properties: Object.fromEntries(operators.map((op) => [op, LISTS.has(op) ? { type: 'array', minItems: 1, items: operand } : operand])),
  });
}

const conditionLevel = (level: number) => (level === 1 ? 'RuleConditions' : `RuleConditionsLevel${level}`);
for (let level = 1; level <= MAX_DEPTH; level += 1) {
  const fields = Object.fromEntries(Object.entries(FIELDS).map(([field, kind]) => [field, ref(OPERATOR_SCHEMAS[kind])]));
  // The combinators share one key pattern, so each level refers to the next once (tools that inline
  // references then grow linearly with the depth, not twice per level). At the deepest level a
  // combinator could only hold deeper members, which are refused.
  const combinators = level < MAX_DEPTH
    ? { [`^(${COMBINATORS.join('|')})$`]: { type: 'array', minItems: 1, items: ref(conditionLevel(level + 1)) } }
    : {};
  named({
    $id: conditionLevel(level),
    type: 'object',
    description: level === 1
      ? `Routing-rule conditions: every key must hold. Keys are fields (${Object.keys(FIELDS).join(', ')}, `
        + `${METADATA_PREFIX}<key>) mapped to operators, or the combinators ${COMBINATORS.join(' / ')} (non-empty lists of `
        + `conditions, nested at most ${MAX_DEPTH} levels).`
      : `Conditions nested ${level} levels deep.`,
    additionalProperties: false,
    properties: fields,
    patternProperties: {
      ...combinators,
      [`^${METADATA_PREFIX.replace('.', '\\.')}[^\\u0000]{1,${METADATA_KEY_MAX}}$`]: ref(OPERATOR_SCHEMAS.text),
    },
  });
}

/** Routing-rule conditions, by reference to the grammar. */
export const RuleConditions = Type.Unsafe<Record<string, unknown>>(ref('RuleConditions'));

/** Every named schema, for ajv (`addSchema`) and for the document's components. */
export const SHARED_SCHEMAS: readonly TSchema[] = shared;

/** Schemas whose unknown keys are a grammar error (validation_failed), not an unknown request field. */
export const GRAMMAR_SCHEMAS: ReadonlySet<object> = new Set(shared.filter((s) => s.$id !== 'JsonValue'));

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const RECORD_KEY = '^(.*)$';

/**
 * The schema requests are validated with, and the document shows: the route's schema plus the rules
 * every request obeys, so that no route can forget them.
 *
 * * A string without a pattern, format, const or enum of its own gets `pattern: NO_NUL` and WELL_FORMED.
 * * An object open to other keys gets both as its `propertyNames`; free-form members
 *   (`additionalProperties: true`) become JsonValue.
 * * `Type.Record(Type.String(), X)` is written by TypeBox as `patternProperties: { "^(.*)$": X }`, and `.`
 *   matches no line break (in JavaScript as in Python): a key with one escaped the value schema. It
 *   becomes `additionalProperties: X`, which covers every key.
 */
export function requestSchema<T extends TSchema>(schema: T): T {
  return withRules(schema) as T;
}

function withRules(schema: unknown): unknown {
  if (!isObject(schema) || typeof schema.$ref === 'string') return schema;
  const s: Json = { ...schema };
  const constrained = s.pattern !== undefined || s.format !== undefined || s.const !== undefined || s.enum !== undefined;
  if (s.type === 'string' && !constrained) Object.assign(s, { pattern: NO_NUL, [WELL_FORMED]: true });
  if (s.type === 'object') {
    const patterns = isObject(s.patternProperties) ? s.patternProperties : undefined;
    if (patterns && Object.keys(patterns).length === 1 && patterns[RECORD_KEY] && s.additionalProperties === undefined) {
      s.additionalProperties = patterns[RECORD_KEY];
      delete s.patternProperties;
    }
    if (s.additionalProperties === true) s.additionalProperties = ref('JsonValue');
    if (s.additionalProperties !== false || s.patternProperties !== undefined) {
      const names = isObject(s.propertyNames) ? s.propertyNames : {};
      if (names.pattern === undefined) s.propertyNames = { ...names, pattern: NO_NUL, [WELL_FORMED]: true };
    }
  }
  for (const key of ['properties', 'patternProperties', '$defs'] as const) {
    if (isObject(s[key])) s[key] = Object.fromEntries(Object.entries(s[key] as Json).map(([k, v]) => [k, withRules(v)]));
  }
  for (const key of ['items', 'additionalProperties', 'not', 'if', 'then', 'else', 'contains'] as const) {
    if (isObject(s[key])) s[key] = withRules(s[key]);
  }
  for (const key of ['anyOf', 'oneOf', 'allOf', 'prefixItems'] as const) {
    if (Array.isArray(s[key])) s[key] = (s[key] as unknown[]).map(withRules);
  }
  return s;
}
