import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@temporalio/client';
import { TestStack, unique } from '../support/stack';
import { CARDS, card, confirm, createPayment, paymentsFixture, PaymentsFixture } from '../support/payments';
import { paymentWorkflowId } from '../../contracts/payments';
import { createActivities } from '../../activities';
import { ensureStuckPaymentWatchdog } from '../../workflows/watchdog/client';
import { stuckNotificationId, watchdogInterval } from '../../contracts/watchdog';
import { eventually, OperatorStack } from './support';

/** What operators see in Temporal (summary, details, visibility queries) and the stuck-payment watchdog. */
export function temporalCases(s: OperatorStack) {
  let stack: TestStack;
  let client: Client;
  let f: PaymentsFixture;
  const confirms: Promise<unknown>[] = [];

  /** A payment whose authorization is never answered: it stays PROCESSING, reconciling. */
  async function stuckPayment(amount: number): Promise<string> {
    const created = await createPayment(stack, f.merchant, { amount });
    confirms.push(confirm(stack, f.merchant, created.body.data.id, { payment_method: card(CARDS.visa) }));
    await eventually(async () => ((await stack.db('live.payments').where({ id: created.body.data.id }).first()).status === 'PROCESSING' ? true : undefined));
    return created.body.data.id;
  }

  async function listIds(query: string): Promise<string[]> {
    const ids: string[] = [];
    for await (const wf of client.workflow.list({ query })) ids.push(wf.workflowId);
    return ids;
  }

  beforeAll(async () => {
    stack = s.stack;
    client = await stack.deps.temporal();
    f = await paymentsFixture(stack, { primary: { blackhole: true, latency_ms: 5000 } });
  });
  afterAll(async () => {
    await Promise.allSettled(confirms);
  });

  describe('what operators see in the Temporal UI', () => {
    it('a payment workflow has a static summary and current details', async () => {
      const created = await createPayment(stack, f.merchant, { amount: 2599 });
      const id = created.body.data.id;
      const handle = client.workflow.getHandle(paymentWorkflowId(id));
      const description = await handle.describe();
      expect(await description.staticSummary()).toBe(`25.99 USD · ${f.merchant.account.id} · ${id}`);
      expect(await description.staticDetails()).toContain(`Payment ${id} of account ${f.merchant.account.id}`);
      const metadata = await handle.query<{ currentDetails: string }>('__temporal_workflow_metadata');
      expect(metadata.currentDetails).toContain('**CREATED** · 25.99 USD');
      // A currency without decimals is not divided by 100.
      const yen = (await createPayment(stack, f.merchant, { amount: 2599, currency: 'JPY' })).body.data.id;
      const yenHandle = client.workflow.getHandle(paymentWorkflowId(yen));
      expect(await (await yenHandle.describe()).staticSummary()).toBe(`2599 JPY · ${f.merchant.account.id} · ${yen}`);
      expect((await yenHandle.query<{ currentDetails: string }>('__temporal_workflow_metadata')).currentDetails).toContain('**CREATED** · 2599 JPY');
    });

    it('finds payments by PaymentStatus="PROCESSING" and by AccountId', async () => {
      const stuck = await stuckPayment(777);
      const other = await createPayment(stack, f.merchant, { amount: 100 });
      const byAccount = await eventually(async () => {
        const ids = await listIds(`AccountId="${f.merchant.account.id}"`);
        return ids.includes(paymentWorkflowId(stuck)) && ids.includes(paymentWorkflowId(other.body.data.id)) ? ids : undefined;
      });
      expect(byAccount.every((wf) => wf.startsWith('payment/'))).toBe(true);
      const processing = await eventually(async () => {
        const ids = await listIds(`PaymentStatus="PROCESSING" AND AccountId="${f.merchant.account.id}"`);
        return ids.includes(paymentWorkflowId(stuck)) ? ids : undefined;
      });
      expect(processing).not.toContain(paymentWorkflowId(other.body.data.id));
      // Once the authorization's outcome is unknown, the details say the payment is being reconciled.
      const details = await eventually(async () => {
        const metadata = await client.workflow.getHandle(paymentWorkflowId(stuck)).query<{ currentDetails: string }>('__temporal_workflow_metadata');
        return metadata.currentDetails.includes('reconciling') ? metadata.currentDetails : undefined;
      });
      expect(details).toContain('**PROCESSING**');
      expect(details).toContain('candidate 1/2');
      expect(details).toContain('reconciling an unknown provider outcome');
    });
  });

  describe('the stuck-payment watchdog', () => {
    it('notifies the account once per payment stuck in PROCESSING past the threshold', async () => {
      const id = await stuckPayment(1999);
      const watchdogId = unique('stuck-payment-watchdog-test');
      await ensureStuckPaymentWatchdog(client, { checkEveryMs: 300, thresholdMs: 1500 }, watchdogId);
      // Starting it again (another worker booting) finds the running one.
      const again = await ensureStuckPaymentWatchdog(client, { checkEveryMs: 300, thresholdMs: 1500 }, watchdogId);
      expect((await client.workflow.getHandle(watchdogId).describe()).runId).toBe(again);
      try {
        const notification = await eventually(async () => stack.db('core.notifications').where({ id: stuckNotificationId(id) }).first(), 30_000, 300);
        expect(notification).toMatchObject({ account_id: f.merchant.account.id, type: 'payment.stuck' });
        expect(notification.details).toMatchObject({ payment_id: id, environment: 'production', amount: 1999, currency: 'USD', threshold_seconds: 2, workflow_id: paymentWorkflowId(id) });
        // Later checks see the payment again but do not repeat the notification.
        await new Promise((r) => setTimeout(r, 1000));
        const rows = await stack.db('core.notifications').where({ type: 'payment.stuck' }).whereRaw("details->>'payment_id' = ?", [id]);
        expect(rows).toHaveLength(1);
        // And the account sees it through the API.
        const listed = await stack.http.get('/v1/notifications').set({ Authorization: `Bearer ${f.merchant.token}` }).query({ account_id: f.merchant.account.id, limit: 100 });
        expect(listed.status, JSON.stringify(listed.body)).toBe(200);
        expect(listed.body.data.map((n: any) => n.id)).toContain(stuckNotificationId(id));
      } finally {
        await client.workflow.getHandle(watchdogId).terminate('test done');
      }
    });

    it('its check is idempotent and leaves young payments alone', async () => {
      const id = await stuckPayment(2001);
      const { notifyStuckPayments } = createActivities({ db: stack.db, config: stack.config });
      const young = await notifyStuckPayments({ thresholdMs: 3_600_000 });
      expect(young.notified).not.toContain(id);
      await new Promise((r) => setTimeout(r, 600));
      const first = await notifyStuckPayments({ thresholdMs: 500 });
      expect(first.notified).toContain(id);
      const second = await notifyStuckPayments({ thresholdMs: 500 });
      expect(second.notified).not.toContain(id);
      expect(second.stuck).toBeGreaterThanOrEqual(1);
    });

    it('checks at least every minute and at least twice per threshold', () => {
      expect(watchdogInterval(10 * 60_000)).toBe(60_000);
      expect(watchdogInterval(30_000)).toBe(15_000);
      expect(watchdogInterval(100)).toBe(1000);
      expect(stack.config.stuckPaymentThresholdMs).toBe(10 * 60_000);
    });
  });
}
