import { proxyActivities, sleep } from '@temporalio/workflow';
import type { WebhookActivities, WebhookSecretRotationInput, WebhookSecretRotationResult } from '../../contracts/webhooks';

const { dropPreviousWebhookSecret } = proxyActivities<WebhookActivities>({
  startToCloseTimeout: '10s',
  retry: { initialInterval: '1s', maximumInterval: '1m', maximumAttempts: 20 },
});

/**
 * `webhook-secret-rotation/<we_id>/<n>`: the API has already swapped the secrets (the previous one is
 * signed with too, until it expires); this durable timer then drops the previous secret. Signing also
 * checks the expiry, so a late timer never extends the old secret's life.
 */
export async function webhookSecretRotationWorkflow(input: WebhookSecretRotationInput): Promise<WebhookSecretRotationResult> {
  if (input.expirePreviousInSeconds > 0) await sleep(input.expirePreviousInSeconds * 1000);
  return dropPreviousWebhookSecret({ environment: input.environment, endpointId: input.endpointId, rotation: input.rotation });
}
