/**
 * Each environment (declared once, in the shared contract contracts/temporal.ts) has its own tables: the
 * same tables in schema `live` (production accounts) and schema `sandbox` (sandbox accounts).
 * Control-plane tables live in `core`.
 */
import type { Environment } from '../contracts/temporal';

export type { Environment };

export const ENV_SCHEMAS = { production: 'live', sandbox: 'sandbox' } as const;

/** Fully qualified table name of an environment table, e.g. `sandbox.payments`. */
export function envTable(env: Environment, table: string): string {
  return `${ENV_SCHEMAS[env]}.${table}`;
}

export function coreTable(table: string): string {
  return `core.${table}`;
}
