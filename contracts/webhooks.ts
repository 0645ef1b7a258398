/**
 * The webhooks contract (docs/webhooks.md): workflow ids, inputs and results, the `retryNow` signal and
 * the activities the webhook workflows call. Imported by the workflows (in Temporal's sandbox) and by
 * the client side, activities, API and ops CLI alike, so it stays free of Node and I/O. Inputs carry
 * ids only: secrets and payloads stay in Postgres, out of Temporal history.
 */
import { defineSignal } from '@temporalio/workflow';
import type { Environment } from './temporal';

export type WebhookEnvironment = Environment;

export const ENDPOINT_STATUSES = ['pending_verification', 'enabled', 'disabled'] as const;
export type EndpointStatus = typeof ENDPOINT_STATUSES[number];

/** Why an endpoint is disabled: by hand, answered 410 Gone, or failing for five days. */
export type DisabledReason = 'manual' | 'gone' | 'failing';

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed', 'dead_lettered'] as const;
export type DeliveryStatus = typeof DELIVERY_STATUSES[number];

/** `automatic`: the fan-out's delivery; `replay`: a manual attempt sequence (replay, recover). */
export type DeliveryTrigger = 'automatic' | 'replay';

export const WEBHOOK_WORKFLOW_IDS = {
  delivery: (deliveryId: string) => `webhook-delivery/${deliveryId}`,
  replay: (deliveryId: string, n: number) => `webhook-delivery/${deliveryId}/replay-${n}`,
  verification: (endpointId: string, n: number) => `webhook-endpoint-verification/${endpointId}/${n}`,
  secretRotation: (endpointId: string, n: number) => `webhook-secret-rotation/${endpointId}/${n}`,
};

// ---------------------------------------------------------------------------------------------------
// Delivery: `webhook-delivery/<whd_id>` (and `…/replay-<n>`)

export interface WebhookDeliveryInput {
  environment: WebhookEnvironment;
  deliveryId: string;
  /**
   * Milliseconds to wait before each retry after the first, immediate attempt (jitter is added by the
   * workflow). Parsed from WEBHOOK_RETRY_SCHEDULE by the starter, so a replay of the history is exact.
   */
  retrySchedule: number[];
  trigger: DeliveryTrigger;
  /**
   * The fan-out made the first attempts itself (`attempts` of them, each using one entry of the schedule)
   * and the last was a transient failure: wait `delayMs` before the next, then go on with the schedule.
   */
  resume?: DeliveryResume;
}

export interface DeliveryResume { attempts: number; delayMs: number }

export interface WebhookDeliveryResult {
  deliveryId: string;
  status: DeliveryStatus;
  attempts: number;
}

/** Wakes a delivery that is waiting for its next retry: attempt now (replay / recover of a retrying one). */
export const retryNowSignal = defineSignal('retryNow');

export interface AttemptDeliveryArgs {
  environment: WebhookEnvironment;
  deliveryId: string;
  trigger: DeliveryTrigger;
  /** The workflow's jittered wait before the next attempt, or null when this is the last one allowed. */
  scheduledDelayMs: number | null;
}

/** What one attempt activity reports back (no body, no headers: nothing secret). */
export interface AttemptOutcome {
  /**
   * `retry`: a transient failure with retries left; wait `delayMs`, then attempt again. `wait`: nothing
   * was sent (the account's attempts in flight are at their limit); wait `delayMs` and ask again, the
   * attempt not counted against the schedule.
   */
  next: 'done' | 'retry' | 'wait';
  status: DeliveryStatus;
  attemptNo: number | null;
  statusCode: number | null;
  delayMs: number | null;
}

// ---------------------------------------------------------------------------------------------------
// Endpoint handshake: `webhook-endpoint-verification/<we_id>/<n>`

export interface WebhookVerificationInput {
  environment: WebhookEnvironment;
  endpointId: string;
  /** The endpoint's verification_count this handshake belongs to. */
  verification: number;
}

export interface WebhookVerificationResult {
  ok: boolean;
  status_code: number | null;
  error: string | null;
}

// ---------------------------------------------------------------------------------------------------
// Secret rotation: `webhook-secret-rotation/<we_id>/<n>`

export interface WebhookSecretRotationInput {
  environment: WebhookEnvironment;
  endpointId: string;
  /** The endpoint's secret_rotation after this rotation. */
  rotation: number;
  expirePreviousInSeconds: number;
}

export type DropPreviousSecretArgs = Omit<WebhookSecretRotationInput, 'expirePreviousInSeconds'>;

export interface WebhookSecretRotationResult { dropped: boolean }

/** The activities the webhook workflows call; activities/webhooks builds them (`satisfies` this). */
export interface WebhookActivities {
  attemptWebhookDelivery(input: AttemptDeliveryArgs): Promise<AttemptOutcome>;
  verifyWebhookEndpoint(input: WebhookVerificationInput): Promise<WebhookVerificationResult>;
  dropPreviousWebhookSecret(input: DropPreviousSecretArgs): Promise<WebhookSecretRotationResult>;
}
