import { proxyActivities, proxyLocalActivities, type RetryPolicy } from '@temporalio/workflow';
import { PAYMENT_ACTIVITY_FAILURES, type PaymentActivities } from '../../contracts/payments';

/**
 * Short Postgres work: quick retries, forever while the database is away (money state must always land).
 * A write Postgres refuses for good fails at once (`permanent_data_error`, the worker's interceptor): see needsAttention.
 */
export const records = proxyActivities<PaymentActivities>({
  startToCloseTimeout: '15s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '10s' },
});

/**
 * Planning a confirm's route runs as a local activity: inside the workflow task, with no round trip
 * through the server for scheduling. It is idempotent, so the at-least-once replays local activities
 * allow are harmless.
 */
export const localRecords = proxyLocalActivities<PaymentActivities>({
  startToCloseTimeout: '15s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '10s' },
});

const PROVIDER_RETRY: RetryPolicy = {
  initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s',
  nonRetryableErrorTypes: [PAYMENT_ACTIVITY_FAILURES.notFound, PAYMENT_ACTIVITY_FAILURES.captureDeclined],
};

/**
 * Provider calls outside the walk's attempts. The heartbeat notices a dead worker within seconds; retries
 * are safe because every provider call carries an idempotency key (the charge id), so a retry can never
 * charge twice.
 */
export const providers = proxyActivities<PaymentActivities>({ startToCloseTimeout: '2m', heartbeatTimeout: '5s', retry: PROVIDER_RETRY });

/**
 * The walk's authorization attempts (and the create that makes the first with the row), as local
 * activities: run inside the workflow task that reached them, so an approved payment takes one workflow
 * task and no activity round trip through the server. What makes `providers` safe holds here too: the
 * attempt is idempotent (the charge id is its processor idempotency key, and the charge row is written
 * before the call), and a worker that dies mid-call loses its workflow task, which the next worker runs
 * again with the same charge id (ids are minted from the workflow's start), noticed within the workflow
 * task timeout instead of the heartbeat timeout.
 */
export const attempts = proxyLocalActivities<PaymentActivities>({ startToCloseTimeout: '2m', retry: PROVIDER_RETRY });
