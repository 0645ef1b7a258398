/**
 * The webhooks command client: the only client-side code that starts, signals or awaits the webhook
 * workflows (used by the API, the ops CLI and the event dispatcher's fan-out). Workflows are started through
 * their functions, and Temporal's failures are read by type into the error catalogue.
 */
import { WorkflowFailedError, type Client } from '@temporalio/client';
import { WorkflowIdReusePolicy } from '@temporalio/common';
import { ApiError } from '../../lib/errors';
import { parseRetrySchedule } from '../../lib/webhook-retry';
import { failureType, isAlreadyStarted, isNotFound } from '../client';
import { TASK_QUEUES } from '../../contracts/temporal';
import {
  retryNowSignal, WEBHOOK_WORKFLOW_IDS, type DeliveryResume, type DeliveryStatus, type DeliveryTrigger,
  type WebhookEnvironment, type WebhookSecretRotationInput, type WebhookVerificationResult,
} from '../../contracts/webhooks';
import { webhookDeliveryWorkflow } from './delivery';
import { webhookSecretRotationWorkflow } from './secret-rotation';
import { webhookVerificationWorkflow } from './verification';

/** A verify call waits for its handshake (one POST of at most 15 s) this long at most. */
const VERIFY_TIMEOUT = '40s';

export interface StartDeliveryArgs {
  workflowId: string;
  environment: WebhookEnvironment;
  deliveryId: string;
  trigger: DeliveryTrigger;
  /** The attempts already made for it (the fan-out's first), and the wait before the next. */
  resume?: DeliveryResume;
}

/** What a resend reads of a delivery, and the state its claim is conditional on. */
export interface ResendableDelivery {
  id: string;
  status: DeliveryStatus;
  replay_count: number;
  workflow_id: string | null;
  next_attempt_at: Date | null;
}

/** The store side of a replay (db/webhooks.ts `replayStore`), handed in so this client stays free of the database. */
export interface ReplayStore {
  /** The environment whose deliveries these are. */
  environment: WebhookEnvironment;
  /** Marks the delivery pending under replay `n` if it is still as read; false when it changed meanwhile. */
  claim(delivery: ResendableDelivery, n: number, workflowId: string): Promise<boolean>;
  /** Puts back what the claim changed, when the replay's workflow could not be started. */
  release(delivery: ResendableDelivery, n: number): Promise<void>;
  /** The failed or dead-lettered deliveries of an endpoint created in [since, until), oldest first. */
  recoverable(endpointId: string, since: Date, until?: Date): Promise<ResendableDelivery[]>;
}

export type Resend = 'signalled' | 'started' | 'skipped';

/**
 * The commands, on a connected client. `webhookRetrySchedule` is WEBHOOK_RETRY_SCHEDULE as configured
 * (unset: the default schedule); it is parsed here and handed to each delivery it starts.
 */
export function webhookClient(client: Client, options: { webhookRetrySchedule?: string } = {}) {
  const retrySchedule = parseRetrySchedule(options.webhookRetrySchedule);
  const commands = {
    /**
     * Starts one delivery workflow. REJECT_DUPLICATE: a workflow id that already ran — even to completion —
     * is never run again, so a retried fan-out cannot deliver twice. Returns false when it already existed.
     */
    async startDelivery(args: StartDeliveryArgs): Promise<boolean> {
      try {
        await client.workflow.start(webhookDeliveryWorkflow, {
          workflowId: args.workflowId,
          taskQueue: TASK_QUEUES.webhooks,
          args: [{ environment: args.environment, deliveryId: args.deliveryId, retrySchedule, trigger: args.trigger, ...(args.resume ? { resume: args.resume } : {}) }],
          workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
        });
        return true;
      } catch (err) {
        if (isAlreadyStarted(err)) return false;
        throw err;
      }
    },

    /** Wakes a delivery waiting for its next retry; false when its workflow no longer runs. */
    async retryNow(workflowId: string): Promise<boolean> {
      try {
        await client.workflow.getHandle(workflowId).signal(retryNowSignal);
        return true;
      } catch (err) {
        if (isNotFound(err)) return false;
        throw err;
      }
    },

    /**
     * Sends a delivery again now, with the same webhook-id. One still retrying (pending/failed) has a
     * workflow waiting on a timer: wake it. Otherwise claim the row (conditional on what was read, so two
     * replays cannot both start) and run a new attempt sequence `webhook-delivery/<whd_id>/replay-<n>`.
     * Callers check who may do it and that the endpoint is enabled; this only sends.
     */
    async resendDelivery(store: ReplayStore, delivery: ResendableDelivery): Promise<Resend> {
      const retrying = delivery.status === 'pending' || delivery.status === 'failed';
      // A retrying delivery whose workflow is gone (failed, terminated) gets a new sequence below.
      if (retrying && delivery.workflow_id && await commands.retryNow(delivery.workflow_id)) return 'signalled';
      const n = delivery.replay_count + 1;
      const workflowId = WEBHOOK_WORKFLOW_IDS.replay(delivery.id, n);
      if (!(await store.claim(delivery, n, workflowId))) return 'skipped';
      try {
        await commands.startDelivery({ workflowId, environment: store.environment, deliveryId: delivery.id, trigger: 'replay' });
      } catch (err) {
        await store.release(delivery, n);
        throw err;
      }
      return 'started';
    },

    /** Re-sends every failed or dead-lettered delivery of an endpoint created in [since, until); answers how many. */
    async recoverDeliveries(store: ReplayStore, endpointId: string, window: { since: Date; until?: Date }): Promise<number> {
      const deliveries = await store.recoverable(endpointId, window.since, window.until);
      let recovered = 0;
      for (let i = 0; i < deliveries.length; i += 20) {
        const results = await Promise.all(deliveries.slice(i, i + 20).map((d) => commands.resendDelivery(store, d)));
        recovered += results.filter((r) => r !== 'skipped').length;
      }
      return recovered;
    },

    /** Starts handshake number `n` without waiting for it (create, URL change, re-enable). */
    async startVerification(environment: WebhookEnvironment, endpointId: string, n: number): Promise<void> {
      await client.workflow.start(webhookVerificationWorkflow, {
        workflowId: WEBHOOK_WORKFLOW_IDS.verification(endpointId, n),
        taskQueue: TASK_QUEUES.webhooks,
        args: [{ environment, endpointId, verification: n }],
        workflowExecutionTimeout: VERIFY_TIMEOUT,
      });
    },

    /** Runs handshake number `n` and waits for its result: 404 when the endpoint is gone, 503 when it did not finish in time. */
    async verify(environment: WebhookEnvironment, endpointId: string, n: number): Promise<WebhookVerificationResult> {
      try {
        return await client.workflow.execute(webhookVerificationWorkflow, {
          workflowId: WEBHOOK_WORKFLOW_IDS.verification(endpointId, n),
          taskQueue: TASK_QUEUES.webhooks,
          args: [{ environment, endpointId, verification: n }],
          workflowExecutionTimeout: VERIFY_TIMEOUT,
        });
      } catch (err) {
        if (err instanceof WorkflowFailedError && failureType(err) === 'not_found') throw ApiError.notFound('webhook endpoint');
        if (err instanceof WorkflowFailedError) {
          throw new ApiError('temporal_unavailable', 'The handshake did not finish in time; try again.', {}, { 'Retry-After': '5' });
        }
        throw err;
      }
    },

    /**
     * Starts the timer that drops the previous secret of rotation `input.rotation`. Two concurrent
     * rotations race for the same workflow id: the loser is a 409 conflict.
     */
    async startSecretRotation(input: WebhookSecretRotationInput): Promise<void> {
      try {
        await client.workflow.start(webhookSecretRotationWorkflow, {
          workflowId: WEBHOOK_WORKFLOW_IDS.secretRotation(input.endpointId, input.rotation),
          taskQueue: TASK_QUEUES.webhooks,
          args: [input],
          // A running timer of this rotation is another request's: refused. A closed one is of a rotation
          // whose swap never happened (the row would name it otherwise): its number is free again.
          workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
        });
      } catch (err) {
        if (isAlreadyStarted(err)) throw new ApiError('conflict', 'This endpoint\'s secret is being rotated by another request.');
        throw err;
      }
    },

    /** Stops the timer of a rotation whose swap failed, so that the rotation can be asked for again. */
    async abandonSecretRotation(endpointId: string, rotation: number): Promise<void> {
      await client.workflow.getHandle(WEBHOOK_WORKFLOW_IDS.secretRotation(endpointId, rotation))
        .terminate('the secret swap it was started for failed');
    },
  };
  return commands;
}

export type WebhookClient = ReturnType<typeof webhookClient>;
