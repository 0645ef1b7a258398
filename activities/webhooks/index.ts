import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { Vault } from '../../lib/vault';
import type { WebhookActivities } from '../../contracts/webhooks';
import type { ActivityDeps } from '../deps';
import type { WebhookActivityContext } from './context';
import { deliveryActivities, deliveryAttempts } from './delivery';
import { endpointActivities } from './endpoints';
import { fanOutActivities } from './fan-out';
import { webhookAgent } from './http';

export interface WebhookActivityDeps extends ActivityDeps {
  /**
   * A Temporal client for the fan-out's workflow starts. Optional: inside a worker the activity uses the
   * worker's own client (activity context); tests and scripts calling the activity directly hand one in.
   */
  temporal?: () => Promise<Client>;
}

/** The webhook activities (fan-out, delivery attempts, handshakes, secret expiry), as the webhooks contract declares them. */
export function webhookActivities(deps: WebhookActivityDeps): WebhookActivities {
  const allowPrivate = deps.config.webhookAllowPrivate;
  const shared: Omit<WebhookActivityContext, 'attempts'> = {
    db: deps.db,
    config: deps.config,
    vault: new Vault(deps.config.vaultKeys),
    agent: webhookAgent(allowPrivate),
    allowPrivate,
    temporal: async () => (deps.temporal ? deps.temporal() : Context.current().client),
  };
  const context: WebhookActivityContext = { ...shared, attempts: deliveryAttempts(shared) };
  return { ...fanOutActivities(context), ...deliveryActivities(context), ...endpointActivities(context) };
}
