import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, TestStack } from '../support/stack';
import { eventually } from '../support/worker-process';
import { claimIdempotencyKey, findIdempotencyKey, releaseIdempotencyKey, reserveIdempotentResource } from '../../db/idempotency';
import { LEASE_LOCK_CLASS, processLease, ProcessLease } from '../../db/process-lease';

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

const claim = (key: string, ownerLease: number | null, requestHash = 'h') => claimIdempotencyKey(stack.db, {
  scope: 'test-lease', key, requestHash, ownerLease, retentionMs: 60_000, staleAfterMs: 300_000,
});

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
    expect(await claim(key, lease)).toBe(true);
    expect(await reserveIdempotentResource(stack.db, 'test-lease', key, 'pay_first')).toBe('pay_first');
    await releaseIdempotencyKey(stack.db, 'test-lease', key);
    expect((await findIdempotencyKey(stack.db, 'test-lease', key))?.state).toBe('released');

    expect(await claim(key, lease, 'another body')).toBe(false);
    expect(await claim(key, lease)).toBe(true);
    expect(await reserveIdempotentResource(stack.db, 'test-lease', key, 'pay_second')).toBe('pay_first');
  });

  it('is forgotten when nothing was reserved', async () => {
    const key = `released-bare-${Date.now()}`;
    expect(await claim(key, await newLease().id())).toBe(true);
    await releaseIdempotencyKey(stack.db, 'test-lease', key);
    expect(await findIdempotencyKey(stack.db, 'test-lease', key)).toBeUndefined();
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
