import { proxyActivities } from '@temporalio/workflow';
import type { WebhookActivities, WebhookVerificationInput, WebhookVerificationResult } from '../../contracts/webhooks';

// One handshake is one POST; a second try only covers the activity itself failing (worker lost).
const { verifyWebhookEndpoint } = proxyActivities<WebhookActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '500ms', maximumAttempts: 2, nonRetryableErrorTypes: ['not_found'] },
});

/**
 * The endpoint handshake `webhook-endpoint-verification/<we_id>/<n>`: the activity loads the secret,
 * POSTs a signed `webhook_endpoint.verification` event with a random challenge and records the answer;
 * the workflow only carries ids and the summary.
 */
export async function webhookVerificationWorkflow(input: WebhookVerificationInput): Promise<WebhookVerificationResult> {
  return verifyWebhookEndpoint(input);
}
