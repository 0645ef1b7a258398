import Koa from 'koa';
import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, TestStack } from '../support/stack';
import { eventually } from '../support/worker-process';
import { TcpProxy } from '../production/support';
import {
  claimIdempotencyKey, findIdempotencyKey, releaseIdempotencyKey, reserveIdempotentResource,
} from '../../db/idempotency';
import { createDb } from '../../db/knex';
import { LEASE_LOCK_CLASS, processLease, ProcessLease } from '../../db/process-lease';
import { idempotency } from '../../api/middleware/idempotency';

let stack: TestStack;
const leases: ProcessLease[] = [];

beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  for (const lease of leases) await lease.close();
  await stack?.close();
});

function newLease(): ProcessLease {
  const lease = processLease(stack.db);
  leases.push(lease);
  return lease;
}

const claimOf = (key: string, ownerLease: number | null, requestHash = 'h') => claimIdempotencyKey(stack.db, {
  scope: 'test-lease', key, requestHash, ownerLease, retentionMs: 60_000, staleAfterMs: 300_000,
});
const claim = async (key: string, ownerLease: number | null, requestHash = 'h') => (await claimOf(key, ownerLease, requestHash)) !== undefined;

/** Ends the session that holds lease `id`, as Postgres does when the process behind it dies. */
async function endSessionOf(id: number): Promise<void> {
  const { rows } = await stack.db.raw<{ rows: { pid: number }[] }>(
    `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND classid = ?::oid AND objid = ?::oid AND objsubid = 2 AND granted`,
    [LEASE_LOCK_CLASS, id],
  );
  expect(rows).toHaveLength(1);
  await stack.db.raw('SELECT pg_terminate_backend(?)', [rows[0].pid]);
}

describe('a process lease', () => {
  it('keeps its claims while its session lives and frees them the moment it ends', async () => {
    const [a, b] = [newLease(), newLease()];
    const [idA, idB] = [await a.id(), await b.id()];
    expect(idA).toEqual(expect.any(Number));
    expect(idB).not.toBe(idA);
    const key = `lease-${Date.now()}`;
    expect(await claim(key, idA)).toBe(true);
    expect(await claim(key, idB)).toBe(false);

    await endSessionOf(idA!);
    expect(await eventually(async () => claim(key, idB))).toBe(true);
    expect((await stack.db('core.idempotency_keys').where({ scope: 'test-lease', key }).first()).owner_lease).toBe(idB);
  });

  it('takes its own id back after its connection is cut', async () => {
    const lease = newLease();
    const id = await lease.id();
    await endSessionOf(id!);
    const again = await eventually(async () => (await lease.id()) ?? undefined, 10_000, 200);
    expect(again).toBe(id);
  });

  it('a claim made without a lease still waits for the stale timeout', async () => {
    const key = `no-lease-${Date.now()}`;
    expect(await claim(key, null)).toBe(true);
    expect(await claim(key, await newLease().id())).toBe(false);
  });
});

describe('a key whose request failed (5xx) after reserving a resource id', () => {
  it('keeps the id for the retry of the same request, which takes the key over at once', async () => {
    const lease = await newLease().id();
    const key = `released-${Date.now()}`;
    const first = (await claimOf(key, lease))!;
    expect(first).toBeDefined();
    expect(await reserveIdempotentResource(stack.db, first, 'pay_first')).toBe('pay_first');
    await releaseIdempotencyKey(stack.db, first);
    expect((await findIdempotencyKey(stack.db, 'test-lease', key))?.state).toBe('released');

    expect(await claim(key, lease, 'another body')).toBe(false);
    const retry = (await claimOf(key, lease))!;
    expect(retry).toBeDefined();
    expect(await reserveIdempotentResource(stack.db, retry, 'pay_second')).toBe('pay_first');
  });

  it('is forgotten when nothing was reserved', async () => {
    const key = `released-bare-${Date.now()}`;
    const first = (await claimOf(key, await newLease().id()))!;
    await releaseIdempotencyKey(stack.db, first);
    expect(await findIdempotencyKey(stack.db, 'test-lease', key)).toBeUndefined();
  });

  it('a late release of an old claim leaves the retry that took the key over alone', async () => {
    const lease = await newLease().id();
    const key = `released-late-${Date.now()}`;
    const first = (await claimOf(key, lease))!;
    await reserveIdempotentResource(stack.db, first, 'pay_first');
    await releaseIdempotencyKey(stack.db, first);
    const retry = (await claimOf(key, lease))!;
    expect(retry.claimId).not.toBe(first.claimId);

    await releaseIdempotencyKey(stack.db, first);
    const row = await findIdempotencyKey(stack.db, 'test-lease', key);
    expect(row).toMatchObject({ state: 'in_progress', claim_id: retry.claimId, owner_lease: lease });
    expect(await claim(key, lease)).toBe(false);
  });

  it('a crashed request is taken over only by the same request', async () => {
    const gone = newLease();
    const key = `crashed-${Date.now()}`;
    expect(await claim(key, await gone.id())).toBe(true);
    await endSessionOf((await gone.id())!);
    const alive = await newLease().id();
    expect(await claim(key, alive, 'another body')).toBe(false);
    expect(await eventually(async () => claim(key, alive))).toBe(true);
  });
});

describe('a claim whose request ended while Postgres was cut', () => {
  let proxy: TcpProxy;
  let cutDb: ReturnType<typeof createDb>;
  let lease: ProcessLease;
  beforeAll(async () => {
    const target = new URL(stack.config.databaseUrl!);
    proxy = await TcpProxy.start(target.hostname, Number(target.port || 5432));
    cutDb = createDb(Object.assign(new URL(target), { hostname: '127.0.0.1', port: String(proxy.port) }).toString(), { max: 2 });
    lease = processLease(cutDb);
  });
  afterAll(async () => {
    await lease?.close();
    await cutDb?.destroy();
    await proxy?.close();
  });

  /** The real middleware in front of a route that, on its first call, loses Postgres and fails. */
  function appThatLosesPostgres(): { app: Koa; runs: () => number } {
    let runs = 0;
    const app = new Koa();
    app.use(async (ctx, next) => {
      try { await next(); } catch (err) { ctx.status = (err as { status?: number }).status ?? 500; ctx.body = { error: 'failed' }; }
    });
    app.use(async (ctx, next) => {
      ctx.state.principal = { kind: 'api_key', accountId: 'acct_cut', keyId: 'key_cut' };
      await next();
    });
    app.use(idempotency(cutDb, lease, 'test-pepper', stack.deps.vault));
    app.use(async (ctx) => {
      runs += 1;
      if (runs === 1) { proxy.cut(); throw new Error('Connection terminated unexpectedly'); }
      ctx.status = 201;
      ctx.body = { id: 'pay_after_cut' };
    });
    return { app, runs: () => runs };
  }

  it('is released by its own process once Postgres is back, so the retry runs at once, not after the stale timeout', async () => {
    const { app, runs } = appThatLosesPostgres();
    const idBefore = await lease.id();
    const key = `cut-${Date.now()}`;
    const post = () => supertest(app.callback()).post('/v1/payments').set('Idempotency-Key', key).send({ amount: 100 });

    expect((await post()).status).toBe(503);
    const left = await stack.db('core.idempotency_keys').where({ key }).first();
    expect(left).toMatchObject({ state: 'in_progress', owner_lease: idBefore }); // the release did not reach Postgres
    proxy.restore();

    // The lease comes back with the same id, so the claim still looks held by a live process...
    expect(await eventually(async () => (await lease.id()) ?? undefined, 10_000, 200)).toBe(idBefore);
    // ...and yet the retry runs within seconds: the process released what it left.
    const retried = await eventually(async () => {
      const answer = await post();
      return answer.status === 201 ? answer : undefined;
    }, 10_000, 250);
    expect(retried.body).toEqual({ id: 'pay_after_cut' });
    expect(runs()).toBe(2);
    expect(await stack.db('core.idempotency_keys').where({ key }).first()).toMatchObject({ state: 'done', response_status: 201 });
  });
});
