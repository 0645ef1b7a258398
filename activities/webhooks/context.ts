import type { Agent } from 'undici';
import type { Db } from '../../db/knex';
import type { WebhookEndpointRow } from '../../db/webhooks';
import type { Config } from '../../lib/config';
import type { Vault } from '../../lib/vault';
import type { WebhookDeliveryRow } from '../../db/webhook-deliveries';
import type { AttemptDeliveryArgs, AttemptOutcome } from '../../contracts/webhooks';

/** What makes an attempt, for the delivery workflow's activity and the fan-out's first attempt alike (delivery.ts). */
export interface DeliveryAttempts {
  /**
   * One attempt of `delivery` as `input` asks, with the account's slot held: see attemptWebhookDelivery.
   * `endpoint` is its endpoint as the caller read it a moment ago (the fan-out's), else it is read here.
   */
  attemptDelivery(input: AttemptDeliveryArgs, delivery: WebhookDeliveryRow, endpoint?: WebhookEndpointRow): Promise<AttemptOutcome>;
}

/**
 * What the webhook activities share: the store's database, the vault, one HTTP pool and the attempts (with
 * their per-account slots), which the event dispatcher's fan-out makes too.
 */
export interface WebhookActivityContext {
  db: Db;
  config: Config;
  vault: Vault;
  agent: Agent;
  allowPrivate: boolean;
  attempts: DeliveryAttempts;
}

/** The endpoint's signing secrets now: the current one, then the previous one while it has not expired. */
export function liveSecrets(vault: Vault, endpoint: WebhookEndpointRow, now: Date): string[] {
  const secrets = [vault.decrypt(endpoint.secret_encrypted)];
  if (endpoint.previous_secret_encrypted && endpoint.previous_secret_expires_at && new Date(endpoint.previous_secret_expires_at) > now) {
    secrets.push(vault.decrypt(endpoint.previous_secret_encrypted));
  }
  return secrets;
}
