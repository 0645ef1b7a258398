import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { ensureTemporalCli } from '../../scripts/temporal-cli';
import { DEFAULT_RETRY_SCHEDULE_MS, jitterBounds, parseRetrySchedule } from '../../lib/webhook-retry';
import type { AttemptOutcome, WebhookDeliveryInput, WebhookDeliveryResult } from '../../contracts/webhooks';

/**
 * The real ≈ 3-day schedule, on Temporal's time-skipping test server: the delivery workflow runs its
 * durable timers for days in a second of wall time, and its history shows every wait it scheduled.
 * The attempt activity is replaced by one that always fails transiently (the HTTP side is covered by the
 * other webhook suites); the workflow code is the production bundle.
 */
let env: TestWorkflowEnvironment;

beforeAll(async () => {
  // Found where `npm start` finds the CLI, else installed next to it (into the data dir) on a first run.
  const executable = await ensureTemporalCli('temporal-test-server');
  env = await TestWorkflowEnvironment.createTimeSkipping({ server: { executable } });
}, 180_000);
afterAll(async () => { await env?.teardown(); });

const HOUR = 3_600_000;

async function runFailingDelivery(schedule: number[], retryAfterMs: (scheduled: number) => number = (s) => s) {
  const attempts: { scheduledDelayMs: number | null; at: number }[] = [];
  const taskQueue = `schedule-${Date.now()}-${Math.random()}`;
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: { codePath: inject('workflowBundlePath') },
    activities: {
      async attemptWebhookDelivery(input: { scheduledDelayMs: number | null }): Promise<AttemptOutcome> {
        attempts.push({ scheduledDelayMs: input.scheduledDelayMs, at: await env.currentTimeMs() });
        if (input.scheduledDelayMs === null) return { next: 'done', status: 'dead_lettered', attemptNo: attempts.length, statusCode: 503, delayMs: null };
        return { next: 'retry', status: 'failed', attemptNo: attempts.length, statusCode: 503, delayMs: retryAfterMs(input.scheduledDelayMs) };
      },
    },
  });
  const workflowId = `webhook-delivery/whd_schedule${attempts.length}${Date.now()}`;
  const startedAt = await env.currentTimeMs();
  const result = await worker.runUntil(env.client.workflow.execute<(i: WebhookDeliveryInput) => Promise<WebhookDeliveryResult>>('webhookDeliveryWorkflow', {
    workflowId, taskQueue, args: [{ environment: 'production', deliveryId: 'whd_schedule', retrySchedule: schedule, trigger: 'automatic' }],
  }));
  const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
  const timers = (history.events ?? []).filter((e) => e.timerStartedEventAttributes)
    .map((e) => {
      const d = e.timerStartedEventAttributes!.startToFireTimeout!;
      return Number(d.seconds ?? 0) * 1000 + Math.round((d.nanos ?? 0) / 1e6);
    });
  return { result, attempts, timers, elapsedMs: (await env.currentTimeMs()) - startedAt };
}

describe('the real webhook retry schedule (time-skipping)', () => {
  it('waits 5s, 5m, 30m, 2h, 5h, 10h, 14h, 20h, 24h (±20 %) between 10 attempts, then dead-letters', async () => {
    const { result, attempts, timers, elapsedMs } = await runFailingDelivery(parseRetrySchedule(undefined));
    expect(result).toEqual({ deliveryId: 'whd_schedule', status: 'dead_lettered', attempts: 10 });
    expect(attempts).toHaveLength(10);
    expect(attempts.at(-1)!.scheduledDelayMs).toBeNull();
    expect(timers).toHaveLength(9);
    timers.forEach((ms, i) => {
      const [lo, hi] = jitterBounds(DEFAULT_RETRY_SCHEDULE_MS[i]);
      expect(ms, `timer ${i + 1}`).toBeGreaterThanOrEqual(lo);
      expect(ms, `timer ${i + 1}`).toBeLessThanOrEqual(hi);
      // The wait the activity was told about is the one the workflow slept.
      expect(attempts[i].scheduledDelayMs).toBe(ms);
    });
    // Jitter really varies the waits, and the whole sequence spans about three days.
    expect(new Set(timers.map((ms, i) => ms / DEFAULT_RETRY_SCHEDULE_MS[i])).size).toBeGreaterThan(1);
    const total = timers.reduce((a, b) => a + b, 0);
    expect(total).toBeGreaterThanOrEqual(0.8 * 75.6 * HOUR);
    expect(total).toBeLessThanOrEqual(1.2 * 75.6 * HOUR);
    expect(elapsedMs).toBeGreaterThanOrEqual(total);
    for (let i = 1; i < attempts.length; i += 1) expect(attempts[i].at - attempts[i - 1].at).toBeGreaterThanOrEqual(timers[i - 1]);
  }, 120_000);

  it('sleeps the wait the attempt reports (Retry-After stretched), not the bare schedule', async () => {
    const { timers } = await runFailingDelivery([HOUR, HOUR], (scheduled) => 2 * scheduled);
    expect(timers).toHaveLength(2);
    for (const ms of timers) {
      expect(ms).toBeGreaterThanOrEqual(2 * 0.8 * HOUR);
      expect(ms).toBeLessThanOrEqual(2 * 1.2 * HOUR);
    }
  }, 120_000);
});
