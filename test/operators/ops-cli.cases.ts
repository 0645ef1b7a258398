import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestStack } from '../support/stack';
import { CARDS, card, confirm, createPayment, paymentsFixture, PaymentsFixture } from '../support/payments';
import { deliveryFor, enabledEndpoint, eventually, getDelivery, OperatorStack, ops, opsEnv, Receiver, startReceiver } from './support';

/** `npm run ops`, run in-process (and once as a program) against the shared operator stack. */
export function opsCliCases(s: OperatorStack) {
  let stack: TestStack;
  let f: PaymentsFixture;
  let receiver: Receiver;
  let stuckId: string;
  let confirming: Promise<unknown>;

  beforeAll(async () => {
    stack = s.stack;
    // The processor takes the authorization and never answers; its status answers come later than the
    // provider timeout, so reconciliation keeps failing and the payment stays PROCESSING.
    f = await paymentsFixture(stack, { primary: { blackhole: true, latency_ms: 5000 } });
    receiver = await startReceiver();
    const created = await createPayment(stack, f.merchant, { amount: 3141 });
    stuckId = created.body.data.id;
    confirming = confirm(stack, f.merchant, stuckId, { payment_method: card(CARDS.visa) });
  });
  afterAll(async () => {
    await confirming?.catch(() => {});
    await receiver?.close();
  });

  describe('payments', () => {
    it('payments:stuck finds a payment left in PROCESSING (visibility query plus its row)', async () => {
      const found = await eventually(async () => {
        const res = await ops('payments:stuck', '--account', f.merchant.account.id, '--json');
        expect(res.code, res.err).toBe(0);
        return res.json().find((p: any) => p.payment_id === stuckId);
      });
      expect(found).toMatchObject({
        payment_id: stuckId, account_id: f.merchant.account.id, environment: 'production', amount: 3141, currency: 'USD',
        status: 'PROCESSING', workflow_id: `payment/${stuckId}`, provider_config_id: f.primary.id,
      });
      expect(found.temporal_ui_url).toContain(encodeURIComponent(`payment/${stuckId}`));

      const text = await ops('payments:stuck', '--account', f.merchant.account.id);
      expect(text.code).toBe(0);
      expect(text.out).toMatch(/PAYMENT\s+ACCOUNT\s+ENV\s+AMOUNT\s+DB STATUS\s+STUCK FOR/);
      expect(text.out).toContain(stuckId);
      expect(text.out).toContain('31.41 USD');

      const older = await ops('payments:stuck', '--account', f.merchant.account.id, '--older-than', '1h', '--json');
      expect(older.json()).toEqual([]);
      expect((await ops('payments:stuck', '--account', f.merchant.account.id, '--older-than', '1h')).out).toContain('No payment has been PROCESSING for more than 1h');
    });

    it('payments:show gives the row, the charges and the workflow\'s live state', async () => {
      const res = await eventually(async () => {
        const r = await ops('payments:show', stuckId, '--json');
        return r.json().workflow.state?.reconciling ? r : undefined;
      });
      const shown = res.json();
      expect(shown.payment).toMatchObject({ id: stuckId, status: 'PROCESSING', amount: 3141, environment: 'production' });
      expect(shown.charges).toHaveLength(1);
      expect(shown.charges[0]).toMatchObject({ attempt_no: 1, status: 'UNKNOWN', payment_provider_config_id: f.primary.id, provider_config_name: 'Primary' });
      expect(shown.workflow).toMatchObject({ workflow_id: `payment/${stuckId}`, status: 'RUNNING', state: { status: 'PROCESSING', reconciling: true, currentIndex: 0 } });

      const text = await ops('payments:show', stuckId);
      expect(text.out).toContain(`Payment ${stuckId}`);
      expect(text.out).toMatch(/reconciling\s+yes/);
      expect(text.out).toMatch(/#1\s+ch_\w+\s+UNKNOWN/);
    });

    it('payments:cancel cancels through the workflow, and refuses a payment in PROCESSING', async () => {
      const created = await createPayment(stack, f.merchant, { amount: 500 });
      const ok = await ops('payments:cancel', created.body.data.id, '--json');
      expect(ok.code, ok.err).toBe(0);
      expect(ok.json()).toEqual({ payment_id: created.body.data.id, status: 'CANCELED' });
      const row = await stack.db('live.payments').where({ id: created.body.data.id }).first();
      expect(row.status).toBe('CANCELED');

      const refused = await ops('payments:cancel', stuckId);
      expect(refused.code).toBe(1);
      expect(refused.err).toMatch(/PROCESSING payment cannot be canceled/);
    });

    it('answers 3 for an unknown payment and 2 for bad usage', async () => {
      expect((await ops('payments:show', 'pay_01NOSUCHPAYMENT0000000000')).code).toBe(3);
      expect((await ops('payments:cancel', 'pay_01NOSUCHPAYMENT0000000000')).code).toBe(3);
      expect((await ops('payments:show')).code).toBe(2);
      expect((await ops('payments:show', 'not-an-id')).code).toBe(2);
      expect((await ops('payments:stuck', '--older-than', 'soon')).code).toBe(2);
      expect((await ops('payments:explode')).code).toBe(2);
      expect((await ops('payments:stuck', '--bogus')).code).toBe(2);
      const help = await ops('--help');
      expect(help.code).toBe(0);
      expect(help.out).toContain('webhooks:recover <we_id> --since <iso>');
    });
  });

  describe('webhooks', () => {
    it('webhooks:dead lists a dead-lettered delivery and webhooks:replay sends it again', async () => {
      receiver.answer = { status: 400, body: '{"error":"nope"}' };
      const endpoint = await enabledEndpoint(stack, f.merchant, receiver.url);
      const dead = await deliveryFor(stack, f.merchant, endpoint.id, 'dead_lettered');

      const listed = await ops('webhooks:dead', '--endpoint', endpoint.id, '--json');
      expect(listed.code, listed.err).toBe(0);
      expect(listed.json().map((d: any) => d.id)).toEqual([dead.id]);
      expect(listed.json()[0]).toMatchObject({ endpoint_id: endpoint.id, event_type: 'payment_intent.created', attempt_count: 1, last_status_code: 400 });
      expect((await ops('webhooks:dead', '--endpoint', endpoint.id)).out).toMatch(new RegExp(`${dead.id}\\s+${endpoint.id}\\s+payment_intent.created\\s+1\\s+400`));

      receiver.answer = { status: 200, body: 'ok' };
      const replayed = await ops('webhooks:replay', dead.id, '--json');
      expect(replayed.code, replayed.err).toBe(0);
      expect(replayed.json()).toMatchObject({ delivery_id: dead.id, result: 'started', status: 'pending' });
      const after = await eventually(async () => {
        const d = await getDelivery(stack, f.merchant, dead.id);
        return d.status === 'succeeded' ? d : undefined;
      });
      expect(after).toMatchObject({ attempt_count: 2, replay_count: 1 });
      expect(after.attempts.map((a: any) => [a.attempt_no, a.status_code, a.trigger])).toEqual([[1, 400, 'automatic'], [2, 200, 'replay']]);
      expect((await ops('webhooks:dead', '--endpoint', endpoint.id, '--json')).json()).toEqual([]);
    });

    it('webhooks:recover re-sends the failed deliveries of a window', async () => {
      receiver.answer = { status: 422, body: '{"error":"schema mismatch"}' };
      const endpoint = await enabledEndpoint(stack, f.merchant, receiver.url);
      const since = new Date(Date.now() - 1000).toISOString();
      const first = await deliveryFor(stack, f.merchant, endpoint.id, 'dead_lettered');
      const second = await deliveryFor(stack, f.merchant, endpoint.id, 'dead_lettered');

      const none = await ops('webhooks:recover', endpoint.id, '--since', new Date(Date.now() + 3600_000).toISOString(), '--json');
      expect(none.json()).toMatchObject({ endpoint_id: endpoint.id, recovered: 0 });

      receiver.answer = { status: 204, body: '' };
      const res = await ops('webhooks:recover', endpoint.id, '--since', since);
      expect(res.code, res.err).toBe(0);
      expect(res.out).toContain(`2 failed or dead-lettered deliveries of ${endpoint.id} re-sent`);
      for (const d of [first, second]) {
        await eventually(async () => ((await getDelivery(stack, f.merchant, d.id)).status === 'succeeded' ? true : undefined));
      }
    });

    it('answers 3 for unknown deliveries and endpoints, 2 without --since', async () => {
      expect((await ops('webhooks:replay', 'whd_01NOSUCH0000000000000000')).code).toBe(3);
      expect((await ops('webhooks:recover', 'we_01NOSUCH0000000000000000', '--since', '2026-01-01T00:00:00Z')).code).toBe(3);
      expect((await ops('webhooks:dead', '--endpoint', 'we_01NOSUCH0000000000000000')).code).toBe(3);
      expect((await ops('webhooks:recover', 'we_01NOSUCH0000000000000000')).code).toBe(2);
      expect((await ops('webhooks:recover', 'we_01NOSUCH0000000000000000', '--since', 'yesterday')).code).toBe(2);
    });

    it('runs as a program with the same exit codes (node --import tsx scripts/ops.ts)', async () => {
      const run = (...args: string[]) => new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        execFile(process.execPath, ['--import', 'tsx', join(__dirname, '..', '..', 'scripts', 'ops.ts'), ...args], { env: opsEnv() }, (err, stdout, stderr) => {
          resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
        });
      });
      const missing = await run('webhooks:dead', '--endpoint', 'we_01NOSUCH0000000000000000');
      expect(missing.code, missing.stderr).toBe(3);
      expect(missing.stderr).toContain('No webhook endpoint we_01NOSUCH0000000000000000');
      const listed = await run('payments:stuck', '--account', f.merchant.account.id, '--json');
      expect(listed.code, listed.stderr).toBe(0);
      expect(JSON.parse(listed.stdout).map((p: any) => p.payment_id)).toContain(stuckId);
    });
  });
}
