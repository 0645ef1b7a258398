// The store of an account's provider configs (docs/providers-and-routing.md): the only module that
// queries `payment_provider_configs`, and the only one that holds their credentials in the clear. Apart
// from the providers and their methods (db/providers.ts) because this is where the vault is used:
// credentials are sealed on the way in and leave masked (lib/providers/credentials.ts); only
// openConfigProvider opens them. Fees and routing rules are db/fees-and-rules.ts's.

import type { Knex } from 'knex';
import { newId } from '../lib/ids';
import { maskCredentials } from '../lib/providers/credentials';
import type { Vault } from '../lib/vault';
import { envTable, type Environment } from './environments';
import { feesAndRulesOf, type ProviderConfigFeeRow, type RoutingRuleRow } from './fees-and-rules';
import { PREPARED } from './knex';

type Json = Record<string, unknown>;

interface Stamps { created_at: Date; updated_at: Date }

/** A provider config without its sealed credentials. */
export interface ProviderConfigRow extends Stamps {
  id: string; account_id: string; payment_provider_id: string; name: string; merchant_capabilities: Json; deleted: boolean;
}

/**
 * A config that does not exist in the environment, from the loaders an activity calls before talking to
 * a provider. Stores stay free of Temporal, so this is a plain typed error; the activity turns it into a
 * non-retryable ApplicationFailure of its `type`, `not_found` (activities/providers/open.ts), since no
 * retry can bring the config back. The API's finders answer undefined instead (a 404).
 */
export class ProviderConfigNotFoundError extends Error {
  readonly type = 'not_found';
  constructor(readonly configId: string, readonly environment: Environment) {
    super(`payment provider config ${configId} not found in ${environment}`);
    this.name = 'ProviderConfigNotFoundError';
  }
}

/** A config as the API shows it: credentials masked. */
export interface MaskedProviderConfig extends ProviderConfigRow {
  credentials: Json;
}

export interface ProviderConfigWithEmbeds extends MaskedProviderConfig {
  fees: ProviderConfigFeeRow[];
  rules: RoutingRuleRow[];
}

type StoredConfig = ProviderConfigRow & { credentials_encrypted: string };

function masked(vault: Vault, stored: StoredConfig): MaskedProviderConfig;
function masked(vault: Vault, stored: StoredConfig | undefined): MaskedProviderConfig | undefined;
function masked(vault: Vault, stored: StoredConfig | undefined): MaskedProviderConfig | undefined {
  if (!stored) return undefined;
  const { credentials_encrypted: sealed, ...row } = stored;
  return { ...row, credentials: maskCredentials(vault.decryptJson<Json | null>(sealed) ?? {}) };
}

const configs = (db: Knex, env: Environment) => db(envTable(env, 'payment_provider_configs'));

export interface NewProviderConfig {
  accountId: string;
  providerId: string;
  name: string;
  credentials: Json;
  merchantCapabilities: Json;
}

export async function createProviderConfig(db: Knex, vault: Vault, env: Environment, input: NewProviderConfig): Promise<MaskedProviderConfig> {
  const [row]: StoredConfig[] = await configs(db, env)
    .insert({
      id: newId('ppc'),
      account_id: input.accountId,
      payment_provider_id: input.providerId,
      name: input.name,
      credentials_encrypted: vault.encryptJson(input.credentials),
      merchant_capabilities: JSON.stringify(input.merchantCapabilities),
    })
    .returning('*');
  return masked(vault, row);
}

/** A config by id, deleted or not. */
export async function findProviderConfig(db: Knex, vault: Vault, env: Environment, id: string): Promise<MaskedProviderConfig | undefined> {
  return masked(vault, await configs(db, env).where({ id }).first());
}

/** Whether the account has a config that is not deleted. */
export async function hasActiveProviderConfig(db: Knex, env: Environment, accountId: string): Promise<boolean> {
  return !!(await configs(db, env).where({ account_id: accountId, deleted: false }).first('id'));
}

/** The account's configs that are not deleted, newest first, with their fees and rules. */
export async function listProviderConfigs(db: Knex, vault: Vault, env: Environment, accountId: string): Promise<ProviderConfigWithEmbeds[]> {
  const rows: StoredConfig[] = await configs(db, env).where({ account_id: accountId, deleted: false })
    .orderBy('created_at', 'desc').orderBy('id', 'desc');
  return withFeesAndRules(db, env, rows.map((row) => masked(vault, row)));
}

/** Configs with their fees and rules (newest first), in two queries whatever their number. */
export async function withFeesAndRules(db: Knex, env: Environment, rows: MaskedProviderConfig[]): Promise<ProviderConfigWithEmbeds[]> {
  const { fees, rules } = await feesAndRulesOf(db, env, rows.map((r) => r.id));
  return rows.map((row) => ({ ...row, fees: fees.get(row.id) ?? [], rules: rules.get(row.id) ?? [] }));
}

export interface ProviderConfigChanges {
  name?: string;
  merchantCapabilities?: Json;
  /** Replaces the stored credentials whole. */
  credentials?: Json;
}

/** Updates a config that is not deleted; undefined when there is none. */
export async function updateProviderConfig(
  db: Knex, vault: Vault, env: Environment, id: string, changes: ProviderConfigChanges,
): Promise<MaskedProviderConfig | undefined> {
  const [row]: StoredConfig[] = await configs(db, env).where({ id, deleted: false })
    .update({
      updated_at: db.fn.now(),
      ...(changes.name !== undefined ? { name: changes.name } : {}),
      ...(changes.merchantCapabilities !== undefined ? { merchant_capabilities: JSON.stringify(changes.merchantCapabilities) } : {}),
      ...(changes.credentials !== undefined ? { credentials_encrypted: vault.encryptJson(changes.credentials) } : {}),
    })
    .returning('*');
  return masked(vault, row);
}

/** Deletes a config softly (no longer routed to; its charges keep working); undefined when already gone. */
export async function deleteProviderConfig(db: Knex, vault: Vault, env: Environment, id: string): Promise<MaskedProviderConfig | undefined> {
  const [row]: StoredConfig[] = await configs(db, env).where({ id, deleted: false })
    .update({ deleted: true, updated_at: db.fn.now() }).returning('*');
  return masked(vault, row);
}

/** A config and the provider behind it, as an activity about to call the provider needs them (no secrets). */
export interface ConfigProvider {
  config: Pick<ProviderConfigRow, 'id' | 'account_id' | 'name' | 'payment_provider_id' | 'merchant_capabilities' | 'deleted'>;
  provider: { id: string; name: string; identifier: string; config: Json };
}

/**
 * The one way to read a config's credentials in the clear, with the config and its provider in the same
 * read: what an activity about to call the provider needs (the credentials never leave it: not in results,
 * history or logs). Deleted configs are included on purpose: a charge made through a config deleted since
 * must still be capturable and refundable. Throws ProviderConfigNotFoundError when the config does not
 * exist in that environment.
 */
export async function openConfigProvider(db: Knex, vault: Vault, env: Environment, configId: string): Promise<ConfigProvider & { credentials: Json }> {
  const row: (ConfigProvider['config'] & { provider_name: string; identifier: string; provider_config: Json | null; credentials_encrypted: string }) | undefined =
    await db(`${envTable(env, 'payment_provider_configs')} as c`)
      .join(`${envTable(env, 'payment_providers')} as p`, 'p.id', 'c.payment_provider_id')
      .where('c.id', configId)
      .first('c.id', 'c.account_id', 'c.name', 'c.payment_provider_id', 'c.merchant_capabilities', 'c.deleted', 'c.credentials_encrypted',
        'p.name as provider_name', 'p.identifier', 'p.config as provider_config')
      .options(PREPARED);
  if (!row) throw new ProviderConfigNotFoundError(configId, env);
  const { provider_name: providerName, identifier, provider_config: providerConfig, credentials_encrypted: sealed, ...config } = row;
  return {
    config,
    provider: { id: config.payment_provider_id, name: providerName, identifier, config: providerConfig ?? {} },
    credentials: vault.decryptJson<Json>(sealed),
  };
}

/** A config's credentials alone, in the clear (openConfigProvider's rules). */
export async function loadProviderCredentials(db: Knex, vault: Vault, env: Environment, configId: string): Promise<Json> {
  return (await openConfigProvider(db, vault, env, configId)).credentials;
}
