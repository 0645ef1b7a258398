/**
 * Every column that holds a vault value (lib/vault.ts), and the reads and writes the key rotation
 * (workflows/vault, activities/vault.ts) and `vault:status` need. A column added that holds a vault
 * value is added to SEALED_COLUMNS, or the rotation would leave it under a key about to be removed.
 */
import type { Knex } from 'knex';
import { ENV_SCHEMAS } from './environments';

export interface SealedColumn {
  /** How progress and `vault:status` name it: `live.payment_methods.pan_encrypted`. */
  name: string;
  /** Schema-qualified. */
  table: string;
  /** The columns that identify a row. */
  key: string[];
  column: string;
  /** When the vault value is a field of a jsonb column: that field. */
  jsonField?: string;
  /** A keyed fingerprint of the same plaintext, recomputed under the newest key when the value moves. */
  fingerprintColumn?: string;
}

function environmentColumns(schema: string): SealedColumn[] {
  const column = (table: string, name: string, extra: Partial<SealedColumn> = {}): SealedColumn => ({
    name: `${schema}.${table}.${name}`, table: `${schema}.${table}`, key: ['id'], column: name, ...extra,
  });
  return [
    column('payment_methods', 'pan_encrypted', { fingerprintColumn: 'card_fingerprint' }),
    column('payment_methods', 'cvc_encrypted'),
    column('payment_provider_configs', 'credentials_encrypted'),
    column('webhook_endpoints', 'secret_encrypted'),
    column('webhook_endpoints', 'previous_secret_encrypted'),
    column('charges', 'authentication_sealed'),
    column('charges', 'return_params_sealed'),
  ];
}

export const SEALED_COLUMNS: readonly SealedColumn[] = [
  ...Object.values(ENV_SCHEMAS).flatMap(environmentColumns),
  // Stored replies (api/middleware/idempotency.ts): `{ "sealed": "<vault value>" }`.
  { name: 'core.idempotency_keys.response_body', table: 'core.idempotency_keys', key: ['scope', 'key'], column: 'response_body', jsonField: 'sealed' },
];

export function sealedColumn(name: string): SealedColumn {
  const found = SEALED_COLUMNS.find((c) => c.name === name);
  if (!found) throw new Error(`no sealed column ${name}`);
  return found;
}

/** The column's vault value as SQL, with its bindings. */
function valueSql(c: SealedColumn): [string, string[]] {
  return c.jsonField ? ['(??->>?)', [c.column, c.jsonField]] : ['??', [c.column]];
}

/** Rows of the column with a vault value (a wiped card number is ''): keys, and the value as `sealed_value`. */
function presentSql(c: SealedColumn): [string, string[]] {
  const [value, bindings] = valueSql(c);
  const keys = c.key.map(() => '??').join(', ');
  return [
    `(SELECT ${keys}, ${value} AS sealed_value FROM ${c.table}) present WHERE sealed_value IS NOT NULL AND sealed_value <> ''`,
    [...c.key, ...bindings],
  ];
}

export interface SealedRow { key: string[]; value: string }

/** Up to `limit` rows whose value is not yet under `keyId`, in key order. */
export async function staleSealedRows(db: Knex, c: SealedColumn, keyId: string, limit: number): Promise<SealedRow[]> {
  const [present, bindings] = presentSql(c);
  const keys = c.key.map(() => '??').join(', ');
  const { rows } = await db.raw(
    `SELECT * FROM ${present} AND NOT starts_with(sealed_value, ?) ORDER BY ${keys} LIMIT ?`,
    [...bindings, `v2.${keyId}.`, ...c.key, limit],
  );
  return (rows as Record<string, string>[]).map((r) => ({ key: c.key.map((k) => r[k]), value: r.sealed_value }));
}

/** A row's value re-encrypted: `next` replaces `row.value` (and the card's fingerprint, for the card number). */
export interface SealedChange { row: SealedRow; next: string; fingerprint?: string }

/**
 * Replaces the rows' values in one statement, each only if it still holds the value read: a write made
 * meanwhile (already under the newest key) is never overwritten. Answers how many rows changed.
 * `updated_at` is left alone: the rows' content is the same.
 */
export async function replaceSealedRows(db: Knex, c: SealedColumn, changes: readonly SealedChange[]): Promise<number> {
  if (!changes.length) return 0;
  const [value, valueBindings] = valueSql(c);
  const columns = [...c.key.map((_, i) => `k${i}`), 'old_value', 'next_value', 'next_fingerprint'];
  const tuple = `(${columns.map(() => '?').join(', ')})`;
  const set = c.jsonField ? ['?? = jsonb_set(??, ?, to_jsonb(v.next_value))', [c.column, c.column, `{${c.jsonField}}`]] as const : ['?? = v.next_value', [c.column]] as const;
  const fp = c.fingerprintColumn ? [', ?? = v.next_fingerprint', [c.fingerprintColumn]] as const : ['', []] as const;
  const keyMatch = c.key.map((_, i) => `t.?? = v.k${i}`).join(' AND ');
  const result = await db.raw(
    `UPDATE ${c.table} AS t SET ${set[0]}${fp[0]} FROM (VALUES ${changes.map(() => tuple).join(', ')}) AS v(${columns.join(', ')})
      WHERE ${keyMatch} AND ${value} = v.old_value`,
    [
      ...set[1], ...fp[1],
      ...changes.flatMap(({ row, next, fingerprint }) => [...row.key, row.value, next, fingerprint ?? null]),
      ...c.key, ...valueBindings,
    ],
  );
  return (result as { rowCount: number }).rowCount;
}

/** One row's replacement (replaceSealedRows): whether it changed. */
export async function replaceSealed(db: Knex, c: SealedColumn, row: SealedRow, next: string, fingerprint?: string): Promise<boolean> {
  return (await replaceSealedRows(db, c, [{ row, next, fingerprint }])) === 1;
}

/** How many of the column's values each key holds: its id, or `v1` for values sealed in the first format, which names no key. */
export async function sealedCountsByKey(db: Knex, c: SealedColumn): Promise<Record<string, number>> {
  const [present, bindings] = presentSql(c);
  const { rows } = await db.raw(
    `SELECT CASE WHEN split_part(sealed_value, '.', 1) = 'v2' THEN split_part(sealed_value, '.', 2) ELSE split_part(sealed_value, '.', 1) END AS key_id,
            count(*)::int AS n
       FROM ${present} GROUP BY 1 ORDER BY 1`,
    bindings,
  );
  return Object.fromEntries((rows as { key_id: string; n: number }[]).map((r) => [r.key_id, r.n]));
}
