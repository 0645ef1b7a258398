import { TSchema, Type } from '@sinclair/typebox';

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

/** metadata: ≤ 50 keys, keys ≤ 40 chars, string values ≤ 500 chars (DESIGN §2). */
export const Metadata = Type.Record(Type.String(), Type.String({ maxLength: 500 }), {
  maxProperties: 50,
  // Record keys' own constraints are not carried into the JSON Schema; propertyNames is.
  propertyNames: { minLength: 1, maxLength: 40 },
  description: 'Free-form string pairs: at most 50 keys of 40 characters, values of 500.',
});

/** Free-form JSON object (conditions, credentials, schemas, …): open by design. */
export const FreeForm = Type.Object({}, { additionalProperties: true });

export const QueryBool = Type.Boolean();

/** page ≥ 1 (default 1), limit 1–100 (default 10); anything else is a 400. */
export const Pagination = {
  page: Type.Optional(Type.Integer({ minimum: 1, default: 1 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 10 })),
};

/** A response resource: documented fields, open to extra ones. */
export const Resource = (object: string, props: Parameters<typeof Type.Object>[0]) =>
  Type.Object({ object: Type.Literal(object), ...props }, { additionalProperties: true });

export type Schema = TSchema;
