import type { Knex } from 'knex';
import * as core from './001_core';
import * as environments from './002_environments';
import * as providers from './004_providers';
import * as webhooks from './005_webhooks';
import * as idempotencyResource from './006_idempotency_resource';
import * as singleUseCards from './007_single_use_cards';
import * as providerEvents from './008_provider_events';
import * as authentication from './009_authentication';
import * as adaptiveRouting from './010_adaptive_routing';
import * as paymentListIndexes from './011_payment_list_indexes';
import * as idempotencyOwner from './012_idempotency_owner';
import * as needsAttention from './013_needs_attention';
import * as paymentVersion from './014_payment_version';
import * as keyLifecycle from './015_key_lifecycle';
import * as auditEvents from './016_audit_events';
import * as adminPermissions from './018_admin_permissions';
import * as sealedCommands from './019_sealed_commands';
import * as clientSecrets from './020_client_secrets';
import * as checkout from './021_checkout';
import * as billing from './022_billing';
import * as disputes from './023_disputes';
import * as disputePaymentIndex from './024_dispute_payment_index';
import * as savedCardCvc from './025_saved_card_cvc';
import * as eventOutbox from './026_event_outbox';
import * as idempotencyClaim from './027_idempotency_claim';
import * as providerHealthShards from './028_provider_health_shards';

interface Migration { up(knex: Knex): Promise<void>; down(knex: Knex): Promise<void>; config?: { transaction?: boolean } }

// Migrations are imported statically so the same list runs from TypeScript sources (tests) and dist/.
const MIGRATIONS: [string, Migration][] = [
  ['001_core', core],
  ['002_environments', environments],
  ['004_providers', providers],
  ['005_webhooks', webhooks],
  ['006_idempotency_resource', idempotencyResource],
  ['007_single_use_cards', singleUseCards],
  ['008_provider_events', providerEvents],
  ['009_authentication', authentication],
  ['010_adaptive_routing', adaptiveRouting],
  ['011_payment_list_indexes', paymentListIndexes],
  ['012_idempotency_owner', idempotencyOwner],
  ['013_needs_attention', needsAttention],
  ['014_payment_version', paymentVersion],
  ['015_key_lifecycle', keyLifecycle],
  ['016_audit_events', auditEvents],
  ['018_admin_permissions', adminPermissions],
  ['019_sealed_commands', sealedCommands],
  ['020_client_secrets', clientSecrets],
  ['021_checkout', checkout],
  ['022_billing', billing],
  ['023_disputes', disputes],
  ['024_dispute_payment_index', disputePaymentIndex],
  ['025_saved_card_cvc', savedCardCvc],
  ['026_event_outbox', eventOutbox],
  ['027_idempotency_claim', idempotencyClaim],
  ['028_provider_health_shards', providerHealthShards],
];

export const migrationSource: Knex.MigrationSource<[string, Migration]> = {
  getMigrations: async () => MIGRATIONS,
  getMigrationName: ([name]) => name,
  getMigration: async ([, migration]) => migration,
};
