import type { Knex } from 'knex';
import type { TestClockStatus } from '../contracts/billing';
import { envTable, type Environment } from './environments';
import { ENDED_SUBSCRIPTION_STATUSES } from '../contracts/billing';

/**
 * The test clocks store (docs/billing.md#test-clocks): a sandbox's own time for the subscriptions made on
 * it. An advance moves `frozen_time` forward and makes the clock ADVANCING; each subscription on it
 * catches up and says so, and the last one to do so makes it READY.
 */

export interface TestClockRow {
  id: string;
  account_id: string;
  name: string | null;
  frozen_time: Date;
  status: TestClockStatus;
  created_at: Date;
  updated_at: Date;
}

const clocks = (db: Knex, env: Environment) => db<TestClockRow>(envTable(env, 'test_clocks'));

export async function findTestClock(db: Knex, env: Environment, id: string): Promise<TestClockRow | undefined> {
  return clocks(db, env).where({ id }).first();
}

/** Writes a new clock; a retry with the same id (Idempotency-Key) finds its row. */
export async function insertTestClock(db: Knex, env: Environment, clock: Pick<TestClockRow, 'id' | 'account_id' | 'name' | 'frozen_time'>): Promise<TestClockRow> {
  await clocks(db, env).insert(clock as never).onConflict('id').ignore();
  return (await findTestClock(db, env, clock.id))!;
}

/**
 * Moves the clock to `time` (never back: a time before its own is refused by answering undefined) and
 * makes it ADVANCING while any subscription on it still runs; answers the row after.
 */
export async function advanceTestClock(db: Knex, env: Environment, id: string, time: Date): Promise<TestClockRow | undefined> {
  const running = db(envTable(env, 'subscriptions')).where({ test_clock_id: id }).whereNotIn('status', ENDED_SUBSCRIPTION_STATUSES).select(db.raw('1'));
  const [row] = await clocks(db, env).where({ id }).where('frozen_time', '<=', time)
    .update({ frozen_time: time, status: db.raw(`CASE WHEN EXISTS (${running.toQuery()}) THEN 'ADVANCING' ELSE 'READY' END`), updated_at: db.fn.now() } as never)
    .returning('*');
  return row as TestClockRow | undefined;
}

/**
 * Records that a subscription caught up with `time` on its clock, and makes the clock READY when no
 * running subscription on it lags behind its frozen time: one statement, so the last to finish sees
 * the others' marks.
 */
export async function markCaughtUp(db: Knex, env: Environment, clockId: string, subscriptionId: string, time: Date): Promise<void> {
  const subs = envTable(env, 'subscriptions');
  await db.transaction(async (trx) => {
    await trx(subs).where({ id: subscriptionId }).update({ clock_caught_up_to: time });
    const clock = await clocks(trx, env).where({ id: clockId }).forUpdate().first();
    if (!clock) return;
    const lagging = await trx(subs).where({ test_clock_id: clockId }).whereNotIn('status', ENDED_SUBSCRIPTION_STATUSES)
      .where((q) => q.whereNull('clock_caught_up_to').orWhere('clock_caught_up_to', '<', clock.frozen_time)).first('id');
    if (!lagging) await clocks(trx, env).where({ id: clockId }).update({ status: 'READY', updated_at: trx.fn.now() } as never);
  });
}

/** An account's clocks, newest first (a sandbox holds a handful). */
export async function listTestClocks(db: Knex, env: Environment, accountId: string, limit: number): Promise<TestClockRow[]> {
  return clocks(db, env).where({ account_id: accountId }).orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit);
}
