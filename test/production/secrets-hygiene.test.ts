import supertest from 'supertest';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalTemporal, startLocalTemporal } from '../../scripts/local-temporal';
import { bearer, startStack, TEST_JWT_SECRET, TEST_SYSTEM_JWT_SECRET, TestStack } from '../support/stack';
import { card, CARDS, paymentsFixture, startSimulator, TestSimulator } from '../support/payments';
import { eventually, spawnWorker, WorkerProcess } from '../support/worker-process';
import { enabledEndpoint, Receiver } from '../webhooks/support';
import { ChildProcessHandle, spawnApi } from './support';
import { flatten } from '../support/history';

/**
 * A full scenario through real API and worker processes (payments with raw cards, a stored card, a
 * refund, an API-key rotation, a webhook endpoint and its secret rotation), then every secret it used
 * is looked for in both processes' logs and in every workflow history of its Temporal server.
 */
describe('secrets hygiene', () => {
  let temporal: LocalTemporal;
  let sim: TestSimulator;
  let stack: TestStack;
  let api: ChildProcessHandle;
  let worker: WorkerProcess;
  let workerLog = '';
  let receiver: Receiver;

  beforeAll(async () => {
    temporal = await startLocalTemporal({});
    sim = await startSimulator();
    stack = await startStack({ TEMPORAL_ADDRESS: temporal.address, TEMPORAL_NAMESPACE: 'default', SIMULATOR_URL: sim.url });
    api = await spawnApi(stack, { LOG_LEVEL: 'debug' });
    worker = await spawnWorker(stack, { LOG_LEVEL: 'debug' });
    worker.proc.stdout!.on('data', (c: Buffer) => { workerLog += c.toString(); });
    worker.proc.stderr!.on('data', (c: Buffer) => { workerLog += c.toString(); });
    receiver = await Receiver.start();
  });

  afterAll(async () => {
    api?.proc.kill('SIGTERM');
    await api?.exited;
    await worker?.stop();
    await stack?.close();
    await temporal?.stop();
    await sim?.close();
    await receiver?.close();
  });

  it('leaves no card number, CVC, credential, key, webhook secret or server secret in logs or histories', async () => {
    // Everything goes through the API process, so its logs see every request.
    const viaChild = { ...stack, http: supertest(api.url) } as TestStack;
    const fx = await paymentsFixture(viaChild);
    const m = fx.merchant;
    const secrets: Record<string, string> = {
      'JWT secret': TEST_JWT_SECRET,
      'system JWT secret': TEST_SYSTEM_JWT_SECRET,
      VAULT_KEYS: stack.config.vaultKeys,
      API_KEY_PEPPER: stack.config.apiKeyPepper,
      'provider credential (primary)': 'sim_primary_key_0001',
      'provider credential (backup)': 'sim_backup_key_0002',
      'secret key (original)': m.secretKey,
      'publishable key': m.publishableKey,
      'user JWT': m.token,
    };
    const cardNumbers = [CARDS.visa, CARDS.amex, CARDS.declined, CARDS.mastercard];
    cardNumbers.forEach((n, i) => { secrets[`card number ${i}`] = n; });

    const http = viaChild.http;
    const paid: string[] = [];
    for (const number of [CARDS.visa, CARDS.amex, CARDS.declined]) {
      const created = await http.post('/v1/payments').set(bearer(m.secretKey)).send({ amount: 2000, currency: 'USD' });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const { id, client_secret: clientSecret } = created.body.data;
      secrets[`client secret of ${id}`] = clientSecret;
      const confirmed = await http.post(`/v1/payments/${id}/confirm`).set(bearer(m.publishableKey)).send({ client_secret: clientSecret, payment_method: card(number) });
      expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(200);
      expect((await http.get(`/v1/payments/${id}?client_secret=${clientSecret}`).set(bearer(m.publishableKey))).status).toBe(200);
      if (confirmed.body.data.status === 'SUCCEEDED') paid.push(created.body.data.id);
    }
    expect(paid).toHaveLength(2);

    const customer = await http.post('/v1/customers').set(bearer(m.secretKey)).send({ name: 'Card holder', email: 'holder@example.com' });
    expect(customer.status).toBe(201);
    const stored = await http.post(`/v1/customers/${customer.body.data.id}/payment-methods`).set(bearer(m.secretKey)).send(card(CARDS.mastercard));
    expect(stored.status, JSON.stringify(stored.body)).toBe(201);

    const refund = await http.post('/v1/refunds').set(bearer(m.secretKey)).send({ payment_id: paid[0], amount: 500 });
    expect(refund.status, JSON.stringify(refund.body)).toBe(201);

    // The first event is refused once: its retry runs in a delivery workflow, whose history is read too.
    let refused = false;
    receiver.respond = (req) => {
      if (req.type === 'webhook_endpoint.verification' || refused) return undefined;
      refused = true;
      return { status: 503 };
    };
    const endpoint = await enabledEndpoint(viaChild, m, receiver, { events: ['*'] });
    secrets['webhook secret (original)'] = endpoint.secret;
    const rotated = await http.post(`/v1/webhook-endpoints/${endpoint.id}/rotate-secret`).set(bearer(m.secretKey)).send({ expire_previous_in_seconds: 0 });
    expect(rotated.status, JSON.stringify(rotated.body)).toBe(200);
    secrets['webhook secret (rotated)'] = rotated.body.data.secret;

    const secretKeyId = (m.account.api_keys as { id: string; type: string }[]).find((k) => k.type === 'SECRET')!.id;
    const regenerated = await http.post(`/v1/api-keys/${secretKeyId}/regenerate`).set(bearer(m.token)).send({});
    expect(regenerated.status, JSON.stringify(regenerated.body)).toBe(200);
    const newKey = regenerated.body.data.key as string;
    expect(newKey).toMatch(/^sk_/);
    secrets['secret key (regenerated)'] = newKey;
    expect((await http.get('/v1/payments').set(bearer(newKey))).status).toBe(200);
    expect((await http.get('/v1/payments').set(bearer(m.secretKey))).status).toBe(401);

    // A payment after the rotation, so that webhook deliveries signed with the new secret happen too.
    const late = await http.post('/v1/payments').set(bearer(newKey)).send({ amount: 700, currency: 'USD' });
    const lateConfirm = await http.post(`/v1/payments/${late.body.data.id}/confirm`).set(bearer(newKey)).send({ payment_method: card(CARDS.visa) });
    expect(lateConfirm.body.data.status).toBe('SUCCEEDED');
    await eventually(async () => {
      const pending = await stack.db('live.webhook_deliveries').where({ endpoint_id: endpoint.id }).whereNot({ status: 'succeeded' });
      const refunds = await stack.db('live.refunds').where({ status: 'PENDING' }).whereIn('payment_id', paid);
      return pending.length === 0 && refunds.length === 0;
    }, 30_000, 200);
    for (const s of [endpoint.secret, rotated.body.data.secret]) secrets[`${s.slice(0, 10)}… without its prefix`] = s.replace(/^whsec_/, '');

    // Every workflow history of this Temporal server, payloads decoded.
    const connection = await Connection.connect({ address: temporal.address });
    const client = new Client({ connection, namespace: 'default' });
    const histories: string[] = [];
    const types = new Set<string>();
    for await (const wf of client.workflow.list()) {
      types.add(wf.type);
      const history = await client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory();
      histories.push(flatten(history).join('\n'));
    }
    await connection.close();
    expect([...types]).toEqual(expect.arrayContaining([
      'paymentWorkflow', 'refundWorkflow', 'apiKeyRotationWorkflow', 'webhookVerificationWorkflow', 'webhookDeliveryWorkflow',
    ]));

    const places = { 'API log': api.output(), 'worker log': workerLog, 'Temporal histories': histories.join('\n') };
    expect(places['API log'].length).toBeGreaterThan(1000);
    expect(places['worker log'].length).toBeGreaterThan(1000);
    // The scan reads decoded payloads: ids passed in workflow inputs are there to be found.
    expect(places['Temporal histories']).toContain(`"${paid[0]}"`);
    const leaks: string[] = [];
    for (const [where, text] of Object.entries(places)) {
      for (const [what, secret] of Object.entries(secrets)) if (text.includes(secret)) leaks.push(`${what} in the ${where}`);
      // CVCs are short: look for them next to their name.
      if (/"?cvc"?\s*[:=]\s*"?\d{3,4}\b/i.test(text)) leaks.push(`a CVC in the ${where}`);
    }
    expect(leaks).toEqual([]);
    console.log(`secrets hygiene: ${Object.keys(secrets).length} secrets, ${histories.length} workflow histories, ${Math.round(places['API log'].length / 1024)} KiB API log, ${Math.round(places['worker log'].length / 1024)} KiB worker log: no leak`);
  }, 120_000);
});
