/**
 * Webhook workflow names, inputs and messages, shared by the API (client side), the activities and the
 * workflows. Inputs carry ids only: secrets and payloads stay in Postgres, out of Temporal history.
 */
import { defineSignal } from '@temporalio/workflow';

export type WebhookEnvironment = 'production' | 'sandbox';

/** `automatic`: the fan-out's delivery; `replay`: a manual attempt sequence (replay, recover). */
export type DeliveryTrigger = 'automatic' | 'replay';

export interface WebhookDeliveryInput {
  environment: WebhookEnvironment;
  deliveryId: string;
  /**
   * Milliseconds to wait before each retry after the first, immediate attempt (jitter is added by the
   * workflow). Parsed from WEBHOOK_RETRY_SCHEDULE by the starter, so a replay of the history is exact.
   */
  retrySchedule: number[];
  trigger: DeliveryTrigger;
}

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed' | 'dead_lettered';

/** What one attempt activity reports back (no body, no headers: nothing secret). */
export interface AttemptOutcome {
  /** `retry`: a transient failure with retries left; wait `delayMs`, then attempt again. */
  next: 'done' | 'retry';
  status: DeliveryStatus;
  attemptNo: number | null;
  statusCode: number | null;
  delayMs: number | null;
}

export interface WebhookDeliveryResult {
  deliveryId: string;
  status: DeliveryStatus;
  attempts: number;
}

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

export interface WebhookSecretRotationInput {
  environment: WebhookEnvironment;
  endpointId: string;
  /** The endpoint's secret_rotation after this rotation. */
  rotation: number;
  expirePreviousInSeconds: number;
}

export interface FanOutEventsInput {
  environment: WebhookEnvironment;
  eventIds: string[];
}

export interface FanOutEventsResult {
  /** Every delivery of these events (new or from an earlier run of the same fan-out). */
  deliveryIds: string[];
  /** Delivery workflows this run started (0 on a retry that found them all running). */
  started: number;
}

/** Wakes a delivery that is waiting for its next retry: attempt now (replay / recover of a retrying one). */
export const retryNowSignal = defineSignal('retryNow');

export const WEBHOOK_WORKFLOW_IDS = {
  delivery: (deliveryId: string) => `webhook-delivery/${deliveryId}`,
  replay: (deliveryId: string, n: number) => `webhook-delivery/${deliveryId}/replay-${n}`,
  verification: (endpointId: string, n: number) => `webhook-endpoint-verification/${endpointId}/${n}`,
  secretRotation: (endpointId: string, n: number) => `webhook-secret-rotation/${endpointId}/${n}`,
};
