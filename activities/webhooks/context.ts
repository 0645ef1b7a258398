import type { Client } from '@temporalio/client';
import type { Agent } from 'undici';
import type { Db } from '../../db/knex';
import type { WebhookEndpointRow } from '../../db/webhooks';
import type { Config } from '../../lib/config';
import type { Vault } from '../../lib/vault';

/** What the webhook activities share: the store's database, the vault, one HTTP pool and a Temporal client. */
export interface WebhookActivityContext {
  db: Db;
  config: Config;
  vault: Vault;
  agent: Agent;
  allowPrivate: boolean;
  temporal(): Promise<Client>;
}

/** The endpoint's signing secrets now: the current one, then the previous one while it has not expired. */
export function liveSecrets(vault: Vault, endpoint: WebhookEndpointRow, now: Date): string[] {
  const secrets = [vault.decrypt(endpoint.secret_encrypted)];
  if (endpoint.previous_secret_encrypted && endpoint.previous_secret_expires_at && new Date(endpoint.previous_secret_expires_at) > now) {
    secrets.push(vault.decrypt(endpoint.previous_secret_encrypted));
  }
  return secrets;
}
