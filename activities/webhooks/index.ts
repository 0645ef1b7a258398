import type { Client } from '@temporalio/client';
import { Vault } from '../../lib/vault';
import type { WebhookActivities } from '../../contracts/webhooks';
import type { ActivityDeps } from '../deps';
import type { WebhookActivityContext } from './context';
import { deliveryActivities, deliveryAttempts } from './delivery';
import { endpointActivities } from './endpoints';
import { eventFanOut } from './fan-out';
import { webhookAgent } from './http';
import { eventDispatcher, type DispatcherOptions, type EventDispatcher } from './outbox';

/**
 * What the webhook activities and the event dispatcher of one worker process share: the store's database,
 * the vault, one HTTP pool and the attempts with their per-account slots.
 */
export function webhookContext(deps: ActivityDeps): WebhookActivityContext {
  const allowPrivate = deps.config.webhookAllowPrivate;
  const shared: Omit<WebhookActivityContext, 'attempts'> = {
    db: deps.db, config: deps.config, vault: new Vault(deps.config.vaultKeys), agent: webhookAgent(allowPrivate), allowPrivate,
  };
  return { ...shared, attempts: deliveryAttempts(shared) };
}

/** The webhook activities (delivery attempts, handshakes, secret expiry), as the webhooks contract declares them. */
export function webhookActivities(deps: ActivityDeps): WebhookActivities {
  const context = deps.webhooks ?? webhookContext(deps);
  return { ...deliveryActivities(context), ...endpointActivities(context) };
}

/**
 * The event dispatcher of a worker process (outbox.ts): it fans out the events written due, with the
 * process's webhook context, and starts delivery workflows through `client` (the worker's own).
 */
export function webhookDispatcher(context: WebhookActivityContext, client: () => Promise<Client>, options?: DispatcherOptions): EventDispatcher {
  return eventDispatcher(context.db, eventFanOut(context, client), options);
}
