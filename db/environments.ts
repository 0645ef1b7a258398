/**
 * Each environment has its own repositories: the same tables in schema `live` (production accounts)
 * and schema `sandbox` (sandbox accounts). Control-plane tables live in `core`.
 */
export type Environment = 'production' | 'sandbox';

export const ENV_SCHEMAS = { production: 'live', sandbox: 'sandbox' } as const;

/** Fully qualified table name of an environment table, e.g. `sandbox.payments`. */
export function envTable(env: Environment, table: string): string {
  return `${ENV_SCHEMAS[env]}.${table}`;
}

export function coreTable(table: string): string {
  return `core.${table}`;
}
