import { randomBytes } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { dropPreviousSecret, findEndpoint, recordVerification } from '../../db/webhooks';
import { newId } from '../../lib/ids';
import { VERIFICATION_EVENT_TYPE } from '../../lib/webhook-events';
import { signedHeaders } from '../../lib/webhook-signature';
import type {
  DropPreviousSecretArgs, WebhookActivities, WebhookSecretRotationResult, WebhookVerificationInput, WebhookVerificationResult,
} from '../../contracts/webhooks';
import { liveSecrets, type WebhookActivityContext } from './context';
import { postWebhook } from './http';

function challengeEchoed(body: string | null, challenge: string): boolean {
  if (body === null) return false;
  if (body.trim() === challenge) return true;
  try {
    const parsed = JSON.parse(body) as unknown;
    return typeof parsed === 'object' && parsed !== null && (parsed as { challenge?: unknown }).challenge === challenge;
  } catch {
    return false;
  }
}

export function endpointActivities({ db, vault, agent, allowPrivate }: WebhookActivityContext):
  Pick<WebhookActivities, 'verifyWebhookEndpoint' | 'dropPreviousWebhookSecret'> {
  return {
    /**
     * The handshake: POST a signed `webhook_endpoint.verification` event carrying a random challenge;
     * a 2xx answer with the challenge (raw, or JSON { challenge }) proves the URL. A pending endpoint
     * becomes enabled; the result is recorded either way. The URL and handshake number must still be
     * current when the answer lands, so a slow handshake never enables a URL changed meanwhile.
     */
    async verifyWebhookEndpoint(input: WebhookVerificationInput): Promise<WebhookVerificationResult> {
      const endpoint = await findEndpoint(db, input.environment, input.endpointId);
      if (!endpoint) throw ApplicationFailure.nonRetryable(`no webhook endpoint ${input.endpointId}`, 'not_found');
      // Deleted before its handshake ran (create, then delete at once): nothing to prove any more.
      if (endpoint.deleted) return { ok: false, status_code: null, error: 'the endpoint was deleted' };
      const challenge = randomBytes(24).toString('base64url');
      const now = new Date();
      const id = newId('evt');
      const body = JSON.stringify({
        id, object: 'event', type: VERIFICATION_EVENT_TYPE, api_version: 'v1', created_at: now.toISOString(),
        account_id: endpoint.account_id, livemode: input.environment === 'production',
        data: { object: { object: 'webhook_endpoint', id: endpoint.id, url: endpoint.url }, challenge },
      });
      const headers = signedHeaders({ id, timestamp: Math.floor(now.getTime() / 1000), body, secrets: liveSecrets(vault, endpoint, now), eventType: VERIFICATION_EVENT_TYPE });
      const http = await postWebhook(agent, allowPrivate, endpoint.url, body, headers);
      const is2xx = http.statusCode >= 200 && http.statusCode < 300;
      const ok = is2xx && challengeEchoed(http.responseBody, challenge);
      const error = ok ? null
        : http.error ?? (is2xx ? 'the response did not echo the challenge' : `HTTP ${http.statusCode}`);
      const result: WebhookVerificationResult = { ok, status_code: http.statusCode || null, error };
      await recordVerification(db, input.environment, { endpointId: endpoint.id, url: endpoint.url, verification: input.verification },
        { ...result, duration_ms: http.durationMs, url: endpoint.url, at: now.toISOString() }, now);
      return result;
    },

    /** The end of a rotation's grace period: drop the previous secret, unless a newer rotation replaced it. */
    async dropPreviousWebhookSecret(input: DropPreviousSecretArgs): Promise<WebhookSecretRotationResult> {
      return { dropped: await dropPreviousSecret(db, input.environment, input.endpointId, input.rotation) };
    },
  };
}
