import { createCipheriv, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities } from '../../activities';
import { replaceSealed, SEALED_COLUMNS, sealedColumn, sealedCountsByKey, staleSealedRows } from '../../db/sealed-columns';
import { runOps } from '../../scripts/ops';
import { Vault } from '../../lib/vault';
import { startVaultRotation } from '../../workflows/vault/client';
import { vaultRotationProgressQuery } from '../../contracts/vault';
import { CARDS, card, confirm, createPayment, newCustomer, paymentsFixture, type PaymentsFixture, savedCard, startSimulator, type TestSimulator } from '../support/payments';
import { privateDatabase, type PrivateDatabase } from '../support/database';
import { bearer, type RunningWorker, startStack, startWorker, suiteEnv, type TestStack } from '../support/stack';
import { enabledEndpoint, eventually, type Receiver, startReceiver } from './support';

/**
 * A full rotation on the real stack: data written under k1 (cards, a legacy v1 card, provider configs,
 * a webhook endpoint, a stored idempotent reply); the ring becomes k2,k1 and the rotation runs while
 * payments are taken; then k1 is removed and everything still works.
 */
const k1 = randomBytes(32).toString('base64');
const k2 = randomBytes(32).toString('base64');
const RING_1 = `k1:${k1}`;
const RING_2 = `k2:${k2},k1:${k1}`;
const RING_3 = `k2:${k2}`;

interface Running { stack: TestStack; worker: RunningWorker }
/** The rotation moves every sealed row: this file's own rows only, not the shared database's. */
let database: PrivateDatabase;
let sim: TestSimulator;
let running: Running | undefined;
let f: PaymentsFixture;
let receiver: Receiver;
let customer: string;
let pm: string;
let legacyPm: string;
let endpointId: string;
const replay = { key: `idem-${randomBytes(6).toString('hex')}`, status: 0, body: undefined as unknown };

async function runWith(ring: string): Promise<Running> {
  await running?.worker.stop();
  await running?.stack.close();
  const stack = await startStack({ SIMULATOR_URL: sim.url, PROVIDER_TIMEOUT_MS: '2000', VAULT_KEYS: ring, DATABASE_URL: database.url });
  running = { stack, worker: await startWorker(stack) };
  return running;
}

async function ops(ring: string, ...argv: string[]) {
  let out = '';
  let err = '';
  const code = await runOps(argv, { env: { ...suiteEnv(), VAULT_KEYS: ring, DATABASE_URL: database.url }, io: { out: (t) => { out += `${t}\n`; }, err: (t) => { err += `${t}\n`; } } });
  return { code, out, err, json: () => JSON.parse(out) };
}

/** A value as the vault wrote it before keys had ids: `v1.…` under the raw key. */
function legacyValue(base64Key: string, plaintext: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', Buffer.from(base64Key, 'base64'), iv);
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return ['v1', iv, cipher.getAuthTag(), ciphertext].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join('.');
}

async function payWithSaved(stack: TestStack, paymentMethodId: string) {
  const created = await createPayment(stack, f.merchant, { customer_id: customer });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return confirm(stack, f.merchant, created.body.data.id, { payment_method_id: paymentMethodId });
}

/** Every sealed value in the database, by key id (`v1` for legacy ones). */
async function keysInUse(stack: TestStack): Promise<Set<string>> {
  const ids = new Set<string>();
  for (const c of SEALED_COLUMNS) Object.keys(await sealedCountsByKey(stack.db, c)).forEach((id) => ids.add(id));
  return ids;
}

const fingerprintOf = async (stack: TestStack, id: string) => (await stack.db('live.payment_methods').where({ id }).first()).card_fingerprint as string;

beforeAll(async () => {
  database = await privateDatabase('key_rotation');
  sim = await startSimulator();
  const { stack } = await runWith(RING_1);
  f = await paymentsFixture(stack);
  customer = await newCustomer(stack, f.merchant);
  pm = await savedCard(stack, f.merchant, customer, CARDS.visa);
  legacyPm = await savedCard(stack, f.merchant, customer, CARDS.mastercard);
  // Enough cards that the rotation takes many batches.
  for (let i = 0; i < 25; i++) await savedCard(stack, f.merchant, await newCustomer(stack, f.merchant), CARDS.amex);
  // As the vault wrote it before keys had ids, under k1's raw bytes.
  await stack.db('live.payment_methods').where({ id: legacyPm }).update({ pan_encrypted: legacyValue(k1, CARDS.mastercard), cvc_encrypted: legacyValue(k1, '123') });
  receiver = await startReceiver({ status: 200, body: '{}' });
  endpointId = (await enabledEndpoint(stack, f.merchant, receiver.url)).id;
  const first = await stack.http.post('/v1/customers').set(bearer(f.merchant.secretKey)).set('Idempotency-Key', replay.key).send({ name: 'Once' });
  expect(first.status).toBe(201);
  Object.assign(replay, { status: first.status, body: first.body });
  expect(await keysInUse(stack)).toEqual(new Set(['k1', 'v1']));
}, 180_000);

afterAll(async () => {
  await running?.worker.stop();
  await running?.stack.close();
  await receiver?.close();
  await sim?.close();
  await database?.drop();
});

describe('vault key rotation', () => {
  it('reads k1 values once k2 is the newest key, and replaces a value only if unchanged meanwhile', async () => {
    const { stack } = await runWith(RING_2);
    const paid = await payWithSaved(stack, pm);
    expect(paid.body.data?.status, JSON.stringify(paid.body)).toBe('SUCCEEDED');

    // A row the rotation read, then written by the API (under k2) before its UPDATE: left as written.
    const pan = sealedColumn('live.payment_methods.pan_encrypted');
    const stale = (await staleSealedRows(stack.db, pan, 'k2', 100)).find((row) => ![pm, legacyPm].includes(row.key[0]))!;
    const vault = new Vault(RING_2);
    const number = vault.decrypt(stale.value);
    const concurrent = vault.encrypt(number);
    await stack.db('live.payment_methods').where({ id: stale.key[0] }).update({ pan_encrypted: concurrent, card_fingerprint: vault.fingerprint(number) });
    expect(await replaceSealed(stack.db, pan, stale, vault.encrypt('0000000000000000'))).toBe(false);
    expect((await stack.db('live.payment_methods').where({ id: stale.key[0] }).first()).pan_encrypted).toBe(concurrent);
  });

  it('moves every sealed value to k2 while payments are being taken, resuming across a worker restart', async () => {
    const { stack } = running!;
    const before = await fingerprintOf(stack, legacyPm);
    const status = await ops(RING_2, 'vault:status', '--json');
    expect(status.code, status.err).toBe(0);
    const older = status.json().older as number;
    // 27 saved cards' numbers (a card saved on its own keeps no CVC), the legacy CVC, the config, the secret, the reply.
    expect(older).toBeGreaterThan(27);

    // Payments keep coming through the API for as long as the rotation runs (a new card each, and the saved one).
    let rotating = true;
    let paused = false;
    const paymentIds: string[] = [];
    const confirms: Promise<unknown>[] = [];
    const load = (async () => {
      while (rotating) {
        if (paused) {
          await new Promise((r) => setTimeout(r, 50));
          continue;
        }
        for (const paymentMethod of [{ payment_method_id: pm }, { payment_method: card(CARDS.visa) }]) {
          const created = await createPayment(stack, f.merchant, { customer_id: customer }, { 'Idempotency-Key': `load-${randomBytes(4).toString('hex')}` });
          expect(created.status, JSON.stringify(created.body)).toBe(201);
          paymentIds.push(created.body.data.id);
          confirms.push(confirm(stack, f.merchant, created.body.data.id, paymentMethod));
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    })();

    // Small batches and runs, so that the rotation spans batches, continue-as-new and a worker restart.
    const client = await stack.deps.temporal();
    const handle = await startVaultRotation(client, { keyId: 'k2', batchSize: 2, batchesPerRun: 3 });
    await eventually(async () => ((await handle.query(vaultRotationProgressQuery)).batches >= 4 ? true : undefined), 60_000, 20);
    // The load pauses while the worker restarts (a worker stops once its running activities end).
    paused = true;
    await Promise.all(confirms);
    await running!.worker.stop();
    const midway = await handle.query(vaultRotationProgressQuery).catch(() => undefined);
    expect((await handle.describe()).status.name).toBe('RUNNING');
    // Started again (no worker yet), it attaches to the running rotation instead of starting another.
    const again = await startVaultRotation(client, { keyId: 'k2', batchSize: 2 });
    expect(again.workflowId).toBe(handle.workflowId);
    running!.worker = await startWorker(stack);
    paused = false;
    const progress = await again.result();
    rotating = false;
    await load;
    await Promise.all(confirms);

    expect(midway === undefined || midway.columns.some((c) => !c.done)).toBe(true);
    expect(progress.batches).toBeGreaterThan(20);
    expect(progress.columns.every((c) => c.done)).toBe(true);
    // Every value under an older key was moved exactly once: nothing lost across the restart.
    expect(progress.columns.reduce((n, c) => n + c.reencrypted + c.skipped, 0)).toBe(older);
    expect(await keysInUse(stack)).toEqual(new Set(['k2']));
    // The card's fingerprint was recomputed under k2 from its number.
    expect(await fingerprintOf(stack, legacyPm)).not.toBe(before);
    expect(await fingerprintOf(stack, legacyPm)).toBe(new Vault(RING_3).fingerprint(CARDS.mastercard));
    // And every payment taken meanwhile went through.
    for (const id of paymentIds) {
      await eventually(async () => {
        const got = await stack.http.get(`/v1/payments/${id}`).set(bearer(f.merchant.secretKey));
        return got.body.data?.status === 'SUCCEEDED' ? true : undefined;
      }, 30_000);
    }
    expect(paymentIds.length).toBeGreaterThan(2);

    // The CLI's rotate reruns the finished rotation (nothing left to move), and status shows zero.
    const rotate = await ops(RING_2, 'vault:rotate', '--json');
    expect(rotate.code, rotate.err).toBe(0);
    expect(rotate.json()).toMatchObject({ key_id: 'k2', status: 'COMPLETED' });
    expect(rotate.json().progress.columns.every((c: { reencrypted: number }) => c.reencrypted === 0)).toBe(true);
    const after = await ops(RING_2, 'vault:status');
    expect(after.code, after.err).toBe(0);
    expect(after.out).toContain('0 values under an older key than k2');
  });

  it('re-running a batch once everything is moved changes nothing', async () => {
    const { stack } = running!;
    const activities = createActivities({ db: stack.db, config: { ...stack.config, vaultKeys: RING_2 } });
    for (const c of SEALED_COLUMNS) {
      expect(await activities.reencryptBatch({ column: c.name, keyId: 'k2', batchSize: 50 })).toEqual({ reencrypted: 0, skipped: 0, done: true });
    }
    await expect(activities.reencryptBatch({ column: SEALED_COLUMNS[0].name, keyId: 'k3', batchSize: 50 })).rejects.toThrow(/newest vault key is "k2"/);
  });

  it('works with k1 removed: saved cards, the provider config, the webhook secret and the stored reply', async () => {
    const { stack } = await runWith(RING_3);
    for (const paymentMethodId of [pm, legacyPm]) {
      const paid = await payWithSaved(stack, paymentMethodId);
      expect(paid.body.data?.status, JSON.stringify(paid.body)).toBe('SUCCEEDED');
    }
    const replayed = await stack.http.post('/v1/customers').set(bearer(f.merchant.secretKey)).set('Idempotency-Key', replay.key).send({ name: 'Once' });
    expect({ status: replayed.status, body: replayed.body }).toEqual({ status: replay.status, body: replay.body });

    const seen = receiver.received.length;
    await createPayment(stack, f.merchant, { amount: 4200 });
    await eventually(async () => (receiver.received.length > seen ? true : undefined), 30_000);
    const endpoint = await stack.db('live.webhook_endpoints').where({ id: endpointId }).first();
    expect(endpoint.secret_encrypted).toMatch(/^v2\.k2\./);
  });

  it('fails loudly, naming the key id, on a value under a key no longer in the ring', async () => {
    const { stack } = running!;
    const orphan = new Vault(RING_1).encrypt('4111111111111111');
    await stack.db('live.payment_methods').where({ id: legacyPm }).update({ cvc_encrypted: orphan });
    const activities = createActivities({ db: stack.db, config: stack.config });
    const error = await activities.reencryptBatch({ column: 'live.payment_methods.cvc_encrypted', keyId: 'k2', batchSize: 10 }).catch((err: Error) => err);
    expect((error as Error).message).toMatch(new RegExp(`live.payment_methods.cvc_encrypted \\(row ${legacyPm}\\).*vault key "k1", which is not in VAULT_KEYS`));
    expect((error as Error).message).not.toContain(k1);
  });
});
