// Routing-rule conditions (docs/providers-and-routing.md#rule-conditions): a small, closed grammar evaluated by one pure
// function. Rules are validated when they are written, so the evaluator can stay simple and total.

export type Scalar = string | number;

export interface OperatorSet {
  eq?: Scalar;
  neq?: Scalar;
  in?: Scalar[];
  nin?: Scalar[];
  gt?: number;
  gte?: number;
  lt?: number;
  lte?: number;
}

/** Keys are fields (`amount`, `card.network`, `metadata.<key>`, …) or the combinators `all` / `any`. */
export interface Conditions {
  all?: Conditions[];
  any?: Conditions[];
  [field: string]: OperatorSet | Conditions[] | undefined;
}

export interface PaymentFacts {
  amount: number;
  currency: string;
  installments: number;
  card: { network: string; country?: string };
  customer?: { country?: string };
  metadata?: Record<string, string>;
}

export interface ConditionError {
  path: string;
  message: string;
}

export type FieldKind = 'number' | 'currency' | 'country' | 'network' | 'text';

export const FIELDS: Record<string, FieldKind> = {
  amount: 'number',
  installments: 'number',
  currency: 'currency',
  'card.network': 'network',
  'card.country': 'country',
  'customer.country': 'country',
};

export const METADATA_PREFIX = 'metadata.';
/** In characters (code points), as JSON Schema's maxLength counts them. */
export const METADATA_KEY_MAX = 40;
export const COMBINATORS = ['all', 'any'] as const;
export const OPERATORS = ['eq', 'neq', 'in', 'nin', 'gt', 'gte', 'lt', 'lte'] as const;
export type Operator = (typeof OPERATORS)[number];
export const ORDERING: ReadonlySet<Operator> = new Set(['gt', 'gte', 'lt', 'lte']);
export const LISTS: ReadonlySet<Operator> = new Set(['in', 'nin']);
// Deep enough for any sensible rule, shallow enough that a hostile body cannot blow the stack.
export const MAX_DEPTH = 8;

// Upper-case codes, as the payment facts carry them: a rule saying "usd" would otherwise never match.
export const VALUE_FORMATS: Record<Exclude<FieldKind, 'number'>, { pattern: RegExp; describe: string }> = {
  currency: { pattern: /^[A-Z]{3}$/, describe: 'an upper-case ISO-4217 code such as "USD"' },
  country: { pattern: /^[A-Z]{2}$/, describe: 'an upper-case ISO-3166 alpha-2 code such as "US"' },
  network: { pattern: /^[A-Z][A-Z0-9_]*$/, describe: 'an upper-case card network such as "VISA"' },
  text: { pattern: /^[\s\S]*$/, describe: 'a string' },
};

function fieldKind(field: string): FieldKind | undefined {
  if (field.startsWith(METADATA_PREFIX)) {
    const length = [...field.slice(METADATA_PREFIX.length)].length;
    return length > 0 && length <= METADATA_KEY_MAX ? 'text' : undefined;
  }
  // Own keys only: `toString` or `constructor` are not fields.
  return Object.hasOwn(FIELDS, field) ? FIELDS[field] : undefined;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function pointer(parent: string, token: string | number): string {
  return `${parent}/${String(token).replace(/~/g, '~0').replace(/\//g, '~1')}`;
}

// ---------------------------------------------------------------------------------------------------
// Validation

export function validateConditions(value: unknown): ConditionError[] {
  const errors: ConditionError[] = [];
  validateObject(value, '', 1, errors);
  return errors;
}

function validateObject(value: unknown, path: string, depth: number, errors: ConditionError[]): void {
  if (!isPlainObject(value)) {
    errors.push({ path: path || '/', message: 'must be an object of fields and combinators' });
    return;
  }
  if (depth > MAX_DEPTH) {
    errors.push({ path: path || '/', message: `nesting deeper than ${MAX_DEPTH} levels` });
    return;
  }
  for (const [key, child] of Object.entries(value)) {
    const childPath = pointer(path, key);
    if ((COMBINATORS as readonly string[]).includes(key)) {
      validateCombinator(child, childPath, depth, errors);
      continue;
    }
    const kind = fieldKind(key);
    if (!kind) {
      errors.push({ path: childPath, message: unknownFieldMessage(key) });
      continue;
    }
    validateOperators(child, kind, childPath, errors);
  }
}

function unknownFieldMessage(key: string): string {
  if (key.startsWith(METADATA_PREFIX)) return `metadata key must be 1-${METADATA_KEY_MAX} characters`;
  const known = [...Object.keys(FIELDS), `${METADATA_PREFIX}<key>`, ...COMBINATORS].join(', ');
  return `unknown field "${key}" (expected one of ${known})`;
}

function validateCombinator(value: unknown, path: string, depth: number, errors: ConditionError[]): void {
  if (!Array.isArray(value) || value.length === 0) {
    errors.push({ path, message: 'must be a non-empty array of condition objects' });
    return;
  }
  value.forEach((item, index) => validateObject(item, pointer(path, index), depth + 1, errors));
}

function validateOperators(value: unknown, kind: FieldKind, path: string, errors: ConditionError[]): void {
  if (!isPlainObject(value) || Object.keys(value).length === 0) {
    errors.push({ path, message: `must be a non-empty object of operators (${OPERATORS.join(', ')})` });
    return;
  }
  for (const [op, operand] of Object.entries(value)) {
    const opPath = pointer(path, op);
    if (!(OPERATORS as readonly string[]).includes(op)) {
      errors.push({ path: opPath, message: `unknown operator "${op}" (expected one of ${OPERATORS.join(', ')})` });
      continue;
    }
    const operator = op as Operator;
    if (ORDERING.has(operator) && kind !== 'number') {
      errors.push({ path: opPath, message: `"${op}" applies to numeric fields (amount, installments) only` });
      continue;
    }
    if (LISTS.has(operator)) {
      if (!Array.isArray(operand) || operand.length === 0) {
        errors.push({ path: opPath, message: 'must be a non-empty array' });
        continue;
      }
      operand.forEach((item, index) => validateOperand(item, kind, pointer(opPath, index), errors));
      continue;
    }
    validateOperand(operand, kind, opPath, errors);
  }
}

function validateOperand(value: unknown, kind: FieldKind, path: string, errors: ConditionError[]): void {
  if (kind === 'number') {
    if (typeof value !== 'number' || !Number.isInteger(value)) errors.push({ path, message: 'must be an integer' });
    return;
  }
  const format = VALUE_FORMATS[kind];
  if (typeof value !== 'string' || !format.pattern.test(value)) errors.push({ path, message: `must be ${format.describe}` });
}

// ---------------------------------------------------------------------------------------------------
// Evaluation

/**
 * True when every key of `conditions` holds for the payment. Expects validated conditions; anything the
 * grammar does not know (an unknown field or operator) fails closed, so a bad rule never routes money.
 */
export function matchesConditions(conditions: Conditions, facts: PaymentFacts): boolean {
  return Object.entries(conditions).every(([key, value]) => {
    if (value === undefined) return true;
    if (key === 'all') return Array.isArray(value) && value.every((child) => matchesConditions(child, facts));
    if (key === 'any') return Array.isArray(value) && value.some((child) => matchesConditions(child, facts));
    if (!fieldKind(key) || !isPlainObject(value)) return false;
    const fact = factOf(key, facts);
    return Object.entries(value).every(([op, operand]) => holds(op, operand, fact));
  });
}

function factOf(field: string, facts: PaymentFacts): Scalar | undefined {
  if (field.startsWith(METADATA_PREFIX)) return facts.metadata?.[field.slice(METADATA_PREFIX.length)];
  switch (field) {
    case 'amount': return facts.amount;
    case 'currency': return facts.currency;
    case 'installments': return facts.installments;
    case 'card.network': return facts.card.network;
    case 'card.country': return facts.card.country;
    case 'customer.country': return facts.customer?.country;
    default: return undefined;
  }
}

// A missing fact (no customer country, no such metadata key) satisfies no positive comparison, but it
// does satisfy the negative ones: "customer.country neq US" holds for a guest with no country, just as
// "not in the list" holds for a value that is absent. Rules that need the fact should also say so
// positively (e.g. `{ in: [...] }`).
function holds(op: string, operand: unknown, fact: Scalar | undefined): boolean {
  switch (op) {
    case 'eq': return fact !== undefined && fact === operand;
    case 'neq': return fact === undefined || fact !== operand;
    case 'in': return fact !== undefined && Array.isArray(operand) && operand.includes(fact);
    case 'nin': return fact === undefined || (Array.isArray(operand) && !operand.includes(fact));
    case 'gt': return typeof fact === 'number' && typeof operand === 'number' && fact > operand;
    case 'gte': return typeof fact === 'number' && typeof operand === 'number' && fact >= operand;
    case 'lt': return typeof fact === 'number' && typeof operand === 'number' && fact < operand;
    case 'lte': return typeof fact === 'number' && typeof operand === 'number' && fact <= operand;
    default: return false;
  }
}
