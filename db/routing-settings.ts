// The store of routing settings (docs/providers-and-routing.md#routing-settings): each environment's
// `routing_settings`, the only module that queries it. An account without a row routes by the defaults.

import type { Knex } from 'knex';
import { DEFAULT_ROUTING_SETTINGS, type RoutingSettings } from '../lib/routing/adaptive-contract';
import { envTable, type Environment } from './environments';

/** Some of the settings: any top-level field, and any field of a section. */
export interface RoutingSettingsPatch {
  strategy?: RoutingSettings['strategy'];
  success_rate?: Partial<RoutingSettings['success_rate']>;
  volume_split?: Partial<RoutingSettings['volume_split']>;
  elimination?: Partial<RoutingSettings['elimination']>;
}

/** `patch` over `base`, section by section; lists (the allocations) are replaced whole. */
export function mergeRoutingSettings(base: RoutingSettings, patch: RoutingSettingsPatch): RoutingSettings {
  return {
    strategy: patch.strategy ?? base.strategy,
    success_rate: { ...base.success_rate, ...patch.success_rate },
    volume_split: { ...base.volume_split, ...patch.volume_split },
    elimination: { ...base.elimination, ...patch.elimination },
  };
}

export interface StoredRoutingSettings {
  settings: RoutingSettings;
  /** When they were last changed; null while the account routes by the defaults. */
  updated_at: Date | null;
}

interface Row { account_id: string; settings: RoutingSettingsPatch; updated_at: Date }

const table = (db: Knex, env: Environment) => db<Row>(envTable(env, 'routing_settings'));
/** Untyped for writes: the jsonb column takes JSON text. */
const writes = (db: Knex, env: Environment) => db(envTable(env, 'routing_settings'));

/** Stored settings with the defaults filled in (a field added after they were stored takes its default). */
const filled = (row: Row | undefined): StoredRoutingSettings => ({
  settings: routingSettingsFrom(row?.settings ?? null),
  updated_at: row?.updated_at ?? null,
});

/** An account's routing settings and when they changed: the defaults when it has none. */
export async function findRoutingSettings(db: Knex, env: Environment, accountId: string): Promise<StoredRoutingSettings> {
  return filled(await table(db, env).where({ account_id: accountId }).first());
}

/**
 * The select of an account's stored settings (one jsonb value, or no row), for the routing inputs'
 * statement to read them with the fees and rules; `routingSettingsFrom` fills in the defaults.
 */
export function routingSettingsQuery(db: Knex, env: Environment, accountId: string): Knex.QueryBuilder {
  return table(db, env).where({ account_id: accountId }).select('settings');
}

/** Settings as `routingSettingsQuery` read them (null: no row), defaults filled. */
export function routingSettingsFrom(stored: RoutingSettingsPatch | null): RoutingSettings {
  return mergeRoutingSettings(DEFAULT_ROUTING_SETTINGS, stored ?? {});
}

/** An account's routing settings, defaults filled: what a routing decision reads. */
export async function routingSettingsOf(db: Knex, env: Environment, accountId: string): Promise<RoutingSettings> {
  return (await findRoutingSettings(db, env, accountId)).settings;
}

/**
 * Changes an account's settings: `change` gets the current ones (defaults filled) and returns the new
 * ones, which are stored whole. Concurrent changes of one account are serialised on its row, so a
 * partial update never undoes another; if `change` throws, nothing is written.
 */
export async function updateRoutingSettings(
  db: Knex, env: Environment, accountId: string, change: (current: RoutingSettings) => Promise<RoutingSettings> | RoutingSettings,
): Promise<StoredRoutingSettings> {
  return db.transaction(async (trx) => {
    // The row to lock, made if missing ('{}': the defaults); rolled back with the rest if change throws.
    await writes(trx, env).insert({ account_id: accountId, settings: '{}' }).onConflict('account_id').ignore();
    const current = await table(trx, env).where({ account_id: accountId }).forUpdate().first();
    const next = await change(filled(current).settings);
    const [row]: Row[] = await writes(trx, env).where({ account_id: accountId })
      .update({ settings: JSON.stringify(next), updated_at: new Date() })
      .returning('*');
    return filled(row);
  });
}
