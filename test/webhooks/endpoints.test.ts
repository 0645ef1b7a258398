import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { envTable } from '../../db/environments';
import { bearer, createMerchant, RunningWorker, signToken, startStack, startWorker, TestStack, unique } from '../support/stack';
import { createEndpoint, getEndpoint, Receiver, waitFor } from './support';

let stack: TestStack;
let strict: TestStack;
let worker: RunningWorker;
const receivers: Receiver[] = [];
const receiver = async () => { const r = await Receiver.start(); receivers.push(r); return r; };

beforeAll(async () => {
  stack = await startStack({ WEBHOOK_RETRY_SCHEDULE: '200ms,400ms,800ms' });
  // The production policy: no http for live endpoints, no private or loopback addresses.
  strict = await startStack({ WEBHOOK_ALLOW_PRIVATE: 'false' });
  worker = await startWorker(stack);
});
afterAll(async () => {
  await worker?.stop();
  await stack?.close();
  await strict?.close();
  await Promise.all(receivers.map((r) => r.close()));
});

describe('webhook endpoints', () => {
  it('creates an endpoint with its secret shown once, stored encrypted, and the handshake enables it', async () => {
    const m = await createMerchant(stack);
    const r = await receiver();
    const created = await createEndpoint(stack, m, { url: r.url(), events: ['payment_intent.succeeded', 'charge.*'], description: 'orders', metadata: { team: 'core' } });
    expect(created).toMatchObject({
      object: 'webhook_endpoint', account_id: m.account.id, url: r.url(), events: ['payment_intent.succeeded', 'charge.*'],
      description: 'orders', metadata: { team: 'core' }, status: 'pending_verification', deleted: false, secret_rotation: 0,
    });
    expect(created.id).toMatch(/^we_[0-9A-Z]{26}$/);
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(created.secret.slice(6), 'base64')).toHaveLength(32);

    const enabled = await waitFor(async () => {
      const e = await getEndpoint(stack, m, created.id);
      return e.status === 'enabled' ? e : undefined;
    }, 'the handshake');
    expect(enabled.secret).toBeNull();
    expect(enabled.verification).toMatchObject({ ok: true, status_code: 200, error: null });
    expect(enabled.verified_at).not.toBeNull();

    // The handshake was a signed webhook_endpoint.verification event with a random challenge.
    const [handshake] = r.requests;
    expect(handshake.type).toBe('webhook_endpoint.verification');
    const payload: any = new Webhook(created.secret).verify(handshake.body, {
      'webhook-id': String(handshake.headers['webhook-id']), 'webhook-timestamp': String(handshake.headers['webhook-timestamp']),
      'webhook-signature': String(handshake.headers['webhook-signature']),
    });
    expect(payload).toMatchObject({ object: 'event', type: 'webhook_endpoint.verification', account_id: m.account.id, livemode: true });
    expect(payload.data.challenge).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(handshake.headers['x-switchboard-event-type']).toBe('webhook_endpoint.verification');

    const row = await stack.db(envTable('production', 'webhook_endpoints')).where({ id: created.id }).first();
    expect(JSON.stringify(row)).not.toContain(created.secret.slice(6));
    expect(stack.deps.vault.decrypt(row.secret_encrypted)).toBe(created.secret);
    const list = await stack.http.get('/v1/webhook-endpoints').set(bearer(m.secretKey));
    expect(list.body).toMatchObject({ total: 1, page: 1, limit: 10, pages: 1 });
    expect(list.body.data[0]).toMatchObject({ id: created.id, secret: null });
  });

  it('accepts a raw challenge body too; a wrong answer leaves the endpoint pending with the reason', async () => {
    const m = await createMerchant(stack);
    const raw = await receiver();
    raw.respond = (req) => ({ status: 200, body: JSON.parse(req.body).data.challenge, headers: { 'content-type': 'text/plain' } });
    const ok = await createEndpoint(stack, m, { url: raw.url() });
    await waitFor(async () => (await getEndpoint(stack, m, ok.id)).status === 'enabled', 'raw challenge handshake');

    const wrong = await receiver();
    wrong.respond = () => ({ status: 200, body: '{"challenge":"nope"}' });
    const bad = await createEndpoint(stack, m, { url: wrong.url() });
    const failed = await waitFor(async () => {
      const e = await getEndpoint(stack, m, bad.id);
      return e.verification ? e : undefined;
    }, 'the failed handshake to be recorded');
    expect(failed).toMatchObject({ status: 'pending_verification', verification: { ok: false, status_code: 200, error: 'the response did not echo the challenge' } });

    const verify = await stack.http.post(`/v1/webhook-endpoints/${bad.id}/verify`).set(bearer(m.secretKey)).send({});
    expect(verify.status).toBe(200);
    expect(verify.body.data).toMatchObject({ object: 'webhook_endpoint', id: bad.id, status: 'pending_verification', verification: { ok: false, status_code: 200, error: 'the response did not echo the challenge' } });

    wrong.respond = () => ({ status: 500, body: 'down' });
    const down = await stack.http.post(`/v1/webhook-endpoints/${bad.id}/verify`).set(bearer(m.secretKey)).send({});
    expect(down.body.data.verification).toEqual({ ok: false, status_code: 500, error: 'HTTP 500' });

    wrong.respond = () => undefined; // the default receiver echoes the challenge
    const fixed = await stack.http.post(`/v1/webhook-endpoints/${bad.id}/verify`).set(bearer(m.secretKey)).send({});
    expect(fixed.status).toBe(200);
    expect(fixed.body.data).toMatchObject({ status: 'enabled', verification: { ok: true, status_code: 200, error: null } });
  });

  it('reports a handshake that cannot connect', async () => {
    const m = await createMerchant(stack);
    const r = await receiver();
    const url = r.url();
    await r.close();
    receivers.splice(receivers.indexOf(r), 1);
    const created = await createEndpoint(stack, m, { url });
    const verify = await stack.http.post(`/v1/webhook-endpoints/${created.id}/verify`).set(bearer(m.secretKey)).send({});
    expect(verify.status).toBe(200);
    expect(verify.body.data.status).toBe('pending_verification');
    expect(verify.body.data.verification).toMatchObject({ ok: false, status_code: null, error: expect.stringMatching(/ECONNREFUSED/) });
  });

  it('validates events against the catalogue and refuses unknown fields', async () => {
    const m = await createMerchant(stack);
    const bad = await stack.http.post('/v1/webhook-endpoints').set(bearer(m.secretKey)).send({ url: 'https://example.com/h', events: ['payment_intent.succeeded', 'payment_intent.exploded'] });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details).toMatchObject({ reason: 'validation_failed', fields: [{ path: 'body/events/1' }] });
    const verification = await stack.http.post('/v1/webhook-endpoints').set(bearer(m.secretKey)).send({ url: 'https://example.com/h', events: ['webhook_endpoint.verification'] });
    expect(verification.status).toBe(400);
    const empty = await stack.http.post('/v1/webhook-endpoints').set(bearer(m.secretKey)).send({ url: 'https://example.com/h', events: [] });
    expect(empty.status).toBe(400);
    const unknown = await stack.http.post('/v1/webhook-endpoints').set(bearer(m.secretKey)).send({ url: 'https://example.com/h', secret: 'mine' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.details.reason).toBe('unknown_field');
    const missing = await stack.http.post('/v1/webhook-endpoints').set(bearer(m.secretKey)).send({});
    expect(missing.status).toBe(400);
    const reserved = await stack.http.post('/v1/webhook-endpoints').set(bearer(m.secretKey)).send({ url: 'http://127.0.0.1:9/h', events: ['invoice.paid', 'subscription.*', 'api_key.rotated', '*'] });
    expect(reserved.status).toBe(201);
  });

  it('applies the URL policy: https for live, no private or loopback addresses (unless allowed)', async () => {
    const live = await createMerchant(strict);
    const sandbox = await createMerchant(strict, { sandboxOf: live });
    const post = (key: string, url: string) => strict.http.post('/v1/webhook-endpoints').set(bearer(key)).send({ url });
    for (const [key, url, reason] of [
      [live.secretKey, 'http://example.com/hook', /https/],
      [live.secretKey, 'https://127.0.0.1/hook', /private/],
      [live.secretKey, 'https://localhost/hook', /must resolve to public addresses only/],
      [sandbox.secretKey, 'http://10.0.0.8/hook', /private/],
      [sandbox.secretKey, 'http://[::1]:8080/hook', /private/],
      [sandbox.secretKey, 'http://169.254.169.254/latest', /private/],
      [sandbox.secretKey, 'ftp://example.com/x', /http/],
    ] as const) {
      const res = await post(key, url);
      expect(res.status, url).toBe(400);
      expect(res.body.error.details.reason).toBe('webhook_url_not_allowed');
      expect(res.body.error.details.fields[0]).toMatchObject({ path: 'body/url', message: expect.stringMatching(reason) });
    }
    // With WEBHOOK_ALLOW_PRIVATE (development, tests) http and loopback are fine in both environments.
    const m = await createMerchant(stack);
    expect((await stack.http.post('/v1/webhook-endpoints').set(bearer(m.secretKey)).send({ url: 'http://127.0.0.1:1/hook' })).status).toBe(201);
  });

  it('updates fields; a new URL goes back to pending_verification and runs the handshake again', async () => {
    const m = await createMerchant(stack);
    const a = await receiver();
    const b = await receiver();
    const created = await createEndpoint(stack, m, { url: a.url() });
    await waitFor(async () => (await getEndpoint(stack, m, created.id)).status === 'enabled', 'enabled');

    const patched = await stack.http.patch(`/v1/webhook-endpoints/${created.id}`).set(bearer(m.secretKey))
      .send({ events: ['refund.*'], description: 'refunds', metadata: { k: 'v' } });
    expect(patched.status).toBe(200);
    expect(patched.body.data).toMatchObject({ status: 'enabled', events: ['refund.*'], description: 'refunds', metadata: { k: 'v' }, secret: null });

    const moved = await stack.http.patch(`/v1/webhook-endpoints/${created.id}`).set(bearer(m.secretKey)).send({ url: b.url() });
    expect(moved.body.data).toMatchObject({ url: b.url(), status: 'pending_verification' });
    await waitFor(async () => (await getEndpoint(stack, m, created.id)).status === 'enabled', 'the new URL\'s handshake');
    expect(b.requests.filter((q) => q.type === 'webhook_endpoint.verification')).toHaveLength(1);

    const bad = await stack.http.patch(`/v1/webhook-endpoints/${created.id}`).set(bearer(m.secretKey)).send({ events: ['nope.nope'] });
    expect(bad.status).toBe(400);
  });

  it('disables and re-enables; a disabled endpoint receives nothing', async () => {
    const m = await createMerchant(stack);
    const r = await receiver();
    const created = await createEndpoint(stack, m, { url: r.url() });
    await waitFor(async () => (await getEndpoint(stack, m, created.id)).status === 'enabled', 'enabled');
    const off = await stack.http.patch(`/v1/webhook-endpoints/${created.id}`).set(bearer(m.secretKey)).send({ disabled: true });
    expect(off.body.data).toMatchObject({ status: 'disabled', disabled_reason: 'manual' });
    const filtered = await stack.http.get('/v1/webhook-endpoints?status=disabled').set(bearer(m.secretKey));
    expect(filtered.body.data.map((e: any) => e.id)).toEqual([created.id]);
    const on = await stack.http.patch(`/v1/webhook-endpoints/${created.id}`).set(bearer(m.secretKey)).send({ disabled: false });
    // The URL was proved before: enabled again at once, without a new handshake.
    expect(on.body.data).toMatchObject({ status: 'enabled', disabled_reason: null });
    expect(r.requests).toHaveLength(1);
  });

  it('deletes softly: gone from reads, kept in the table', async () => {
    const m = await createMerchant(stack);
    const created = await createEndpoint(stack, m, { url: 'http://127.0.0.1:1/x' });
    const del = await stack.http.delete(`/v1/webhook-endpoints/${created.id}`).set(bearer(m.secretKey));
    expect(del.status).toBe(200);
    expect(del.body.data).toMatchObject({ id: created.id, deleted: true, secret: null });
    expect((await stack.http.get(`/v1/webhook-endpoints/${created.id}`).set(bearer(m.secretKey))).status).toBe(404);
    expect((await stack.http.delete(`/v1/webhook-endpoints/${created.id}`).set(bearer(m.secretKey))).status).toBe(404);
    expect((await stack.http.get('/v1/webhook-endpoints').set(bearer(m.secretKey))).body.total).toBe(0);
    expect(await stack.db(envTable('production', 'webhook_endpoints')).where({ id: created.id }).first()).toMatchObject({ deleted: true });
  });

  it('holds an account to 16 endpoints: disabled ones count, deleted ones do not, concurrent creates cannot pass it together', async () => {
    const m = await createMerchant(stack);
    const other = await createMerchant(stack);
    const table = stack.db(envTable('production', 'webhook_endpoints'));
    const seeded = (i: number, fields: Record<string, unknown>) => ({
      id: unique('we'), account_id: m.account.id, url: `http://127.0.0.1:1/seeded-${i}`, status: 'enabled',
      secret_encrypted: stack.deps.vault.encrypt(`whsec_seeded${i}`), ...fields,
    });
    // 13 enabled, one disabled (14 that count) and three deleted (which do not).
    await table.insert([
      ...Array.from({ length: 13 }, (_, i) => seeded(i, {})),
      seeded(13, { status: 'disabled', disabled_reason: 'manual' }),
      ...Array.from({ length: 3 }, (_, i) => seeded(20 + i, { deleted: true })),
    ]);

    // Five at once with two places left: two are made, three refused.
    const answers = await Promise.all(Array.from({ length: 5 }, (_, i) =>
      stack.http.post('/v1/webhook-endpoints').set(bearer(m.secretKey)).send({ url: `http://127.0.0.1:1/new-${i}` })));
    expect(answers.map((a) => a.status).sort()).toEqual([201, 201, 422, 422, 422]);
    const refused = answers.find((a) => a.status === 422)!;
    expect(refused.body.error.details).toEqual({ reason: 'webhook_endpoint_limit_reached', limit: 16 });
    expect(refused.body.message).toBe('An account may have at most 16 webhook endpoints; delete one first.');
    const counted = async () => Number((await stack.db(envTable('production', 'webhook_endpoints'))
      .where({ account_id: m.account.id, deleted: false }).count({ n: '*' }))[0].n);
    expect(await counted()).toBe(16);

    // Another account is not held by this one's endpoints; deleting one frees a place.
    await createEndpoint(stack, other, { url: 'http://127.0.0.1:1/other' });
    const made = answers.find((a) => a.status === 201)!.body.data;
    expect((await stack.http.delete(`/v1/webhook-endpoints/${made.id}`).set(bearer(m.secretKey))).status).toBe(200);
    await createEndpoint(stack, m, { url: 'http://127.0.0.1:1/after-delete' });
    const full = await stack.http.post('/v1/webhook-endpoints').set(bearer(m.secretKey)).send({ url: 'http://127.0.0.1:1/one-more' });
    expect(full.status).toBe(422);
    expect(await counted()).toBe(16);
  });

  it('hides other tenants\' endpoints and enforces webhook permissions', async () => {
    const owner = await createMerchant(stack);
    const stranger = await createMerchant(stack);
    const created = await createEndpoint(stack, owner, { url: 'http://127.0.0.1:1/x' });
    for (const [method, path] of [['get', ''], ['patch', ''], ['delete', ''], ['post', '/verify'], ['post', '/rotate-secret']] as const) {
      const res = await (stack.http as any)[method](`/v1/webhook-endpoints/${created.id}${path}`).set(bearer(stranger.secretKey)).send({});
      expect(res.status, `${method} ${path}`).toBe(404);
    }
    expect((await stack.http.get('/v1/webhook-endpoints/we_nope').set(bearer(owner.secretKey))).status).toBe(404);

    // A JWT user: needs account_id; a VIEWER may read, not write.
    const viewerId = unique('usr');
    await stack.db('core.account_memberships').insert({ id: `mem_${viewerId}`, account_id: owner.account.id, user_id: viewerId, role: 'VIEWER' });
    const viewer = signToken({ sub: viewerId, workspace_id: owner.workspaceId });
    expect((await stack.http.get(`/v1/webhook-endpoints?account_id=${owner.account.id}`).set(bearer(viewer))).status).toBe(200);
    expect((await stack.http.get(`/v1/webhook-endpoints/${created.id}`).set(bearer(viewer))).status).toBe(200);
    const write = await stack.http.post(`/v1/webhook-endpoints?account_id=${owner.account.id}`).set(bearer(viewer)).send({ url: 'http://127.0.0.1:1/y' });
    expect(write.status).toBe(403);
    expect(write.body.error.details).toMatchObject({ reason: 'insufficient_permissions', required: 'webhook:write' });
    expect((await stack.http.get('/v1/webhook-endpoints').set(bearer(owner.token))).status).toBe(400);
  });

  it('rotate-secret validates its window (0 to 7 days)', async () => {
    const m = await createMerchant(stack);
    const created = await createEndpoint(stack, m, { url: 'http://127.0.0.1:1/x' });
    for (const value of [-1, 7 * 86_400 + 1, 1.5, '60']) {
      const res = await stack.http.post(`/v1/webhook-endpoints/${created.id}/rotate-secret`).set(bearer(m.secretKey)).send({ expire_previous_in_seconds: value });
      expect(res.status, String(value)).toBe(400);
    }
    const now = await stack.http.post(`/v1/webhook-endpoints/${created.id}/rotate-secret`).set(bearer(m.secretKey)).send({ expire_previous_in_seconds: 0 });
    expect(now.status).toBe(200);
    expect(now.body.data).toMatchObject({ secret_rotation: 1, previous_secret_expires_at: null });
    expect(now.body.data.secret).not.toBe(created.secret);
  });
});
