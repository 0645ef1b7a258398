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

/**
 * Replaces one row's value, only if it still holds `old`: a write made meanwhile (already under the
 * newest key) is never overwritten. Answers whether the row was changed. `updated_at` is left alone:
 * the row's content is the same.
 */
export async function replaceSealed(db: Knex, c: SealedColumn, row: SealedRow, next: string, fingerprint?: string): Promise<boolean> {
  const [value, valueBindings] = valueSql(c);
  const set = c.jsonField ? ['?? = jsonb_set(??, ?, to_jsonb(?::text))', [c.column, c.column, `{${c.jsonField}}`, next]] as const : ['?? = ?', [c.column, next]] as const;
  const fp = c.fingerprintColumn && fingerprint !== undefined ? [', ?? = ?', [c.fingerprintColumn, fingerprint]] as const : ['', []] as const;
  const keyMatch = c.key.map(() => '?? = ?').join(' AND ');
  const result = await db.raw(
    `UPDATE ${c.table} SET ${set[0]}${fp[0]} WHERE ${keyMatch} AND ${value} = ?`,
    [...set[1], ...fp[1], ...c.key.flatMap((k, i) => [k, row.key[i]]), ...valueBindings, row.value],
  );
  return (result as { rowCount: number }).rowCount === 1;
}

/** How many of the column's values each key holds: its id, or `v1` for legacy values. */
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
