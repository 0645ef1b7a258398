import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Knex } from 'knex';
import { envTable } from '../../db/environments';
import { PREPARED } from '../../db/knex';
import { EVENT_COLUMNS } from '../../db/events';
import { PAYMENT_METHOD_COLUMNS } from '../../db/payment-methods';
import { findPayment, findShownPayment } from '../../db/payments';
import { ENDPOINT_COLUMNS } from '../../db/webhooks';
import { newId } from '../../lib/ids';
import { createMerchant, Merchant, startStack, TestStack } from '../support/stack';

/**
 * Statements marked PREPARED (db/knex.ts) run as named prepared statements: parsed once per connection
 * and planned from Postgres's cache. Read from `pg_prepared_statements`, which shows a session's own,
 * so each case runs on one connection (a transaction's), rolled back.
 */

let stack: TestStack;
let m: Merchant;
beforeAll(async () => {
  stack = await startStack();
  m = await createMerchant(stack);
});
afterAll(async () => { await stack.close(); });

const rolledBack = new Error('rolled back');

/** Runs `work` on one connection and rolls it back. */
async function onOneConnection(work: (trx: Knex.Transaction) => Promise<void>): Promise<void> {
  await expect(stack.db.transaction(async (trx) => { await work(trx); throw rolledBack; })).rejects.toBe(rolledBack);
}

/** The session's statements prepared by PREPARED, with their text. */
async function preparedOn(trx: Knex.Transaction): Promise<{ name: string; statement: string }[]> {
  const { rows } = await trx.raw("select name, statement from pg_prepared_statements where name like 'sb\\_%' order by prepare_time");
  return rows;
}

async function seedPayment(): Promise<string> {
  const id = newId('pay');
  await stack.db(envTable('production', 'payments')).insert({
    id, account_id: m.account.id, amount: 1_000, currency: 'EUR', status: 'SUCCEEDED', auto_capture: true, secure_mode: 'NONE', installments: 1,
    routing_origin: 'MERCHANT_DIRECT', routing: '{}', amount_capturable: 0, amount_received: 1_000, amount_refunded: 0, metadata: '{}',
  });
  return id;
}

describe('prepared statements', () => {
  it('prepares a marked statement once per connection, each variant of its text under a name of its own', async () => {
    const id = await seedPayment();
    await onOneConnection(async (trx) => {
      expect(await preparedOn(trx)).toEqual([]);
      expect((await findShownPayment(trx, 'production', id))?.id).toBe(id);
      expect((await findShownPayment(trx, 'production', 'pay_missing'))).toBeUndefined();
      const once = await preparedOn(trx);
      expect(once).toEqual([{ name: expect.stringMatching(/^sb_[\w-]{27}$/), statement: expect.stringMatching(/^select "id", "account_id", .* from "live"."payments"/) }]);
      // The sandbox's table is another text, so another statement; an unmarked read prepares none.
      await findShownPayment(trx, 'sandbox', id);
      await findPayment(trx, 'production', id);
      const both = await preparedOn(trx);
      expect(both).toHaveLength(2);
      expect(both[0]).toEqual(once[0]);
      expect(both[1].statement).toContain('from "sandbox"."payments"');
    });
  });

  it('keeps a prepared statement running after a migration adds a column to its table', async () => {
    const id = await seedPayment();
    await onOneConnection(async (trx) => {
      await trx.raw("SET LOCAL lock_timeout = '5s'");
      expect((await findShownPayment(trx, 'production', id))?.id).toBe(id);
      await trx.raw(`ALTER TABLE ${envTable('production', 'payments')} ADD COLUMN prepared_probe integer`);
      expect((await findShownPayment(trx, 'production', id))?.id).toBe(id);
    });
  });

  it.each([
    ['payment_methods', PAYMENT_METHOD_COLUMNS], ['events', EVENT_COLUMNS], ['webhook_endpoints', ENDPOINT_COLUMNS],
  ] as const)('names every column of %s, in the table\'s order, where a prepared statement reads its rows whole', async (table, columns) => {
    for (const schema of ['live', 'sandbox']) {
      const inTable = await stack.db('information_schema.columns').where({ table_schema: schema, table_name: table }).orderBy('ordinal_position').pluck('column_name');
      expect(inTable).toEqual([...columns]);
    }
  });

  it('refuses to prepare a statement that reads or returns every column, before it reaches Postgres', async () => {
    const payments = envTable('production', 'payments');
    await expect(stack.db(payments).where({ id: 'pay_x' }).first().options(PREPARED)).rejects.toThrow('a prepared statement names its columns');
    await expect(stack.db(payments).where({ id: 'pay_x' }).update({ amount: 1 }).returning('*').options(PREPARED)).rejects.toThrow('names its columns');
    await expect(stack.db({ p: payments }).select('p.*').options(PREPARED)).rejects.toThrow('names its columns');
    // A count of every row is not every column.
    expect(await stack.db(payments).where({ id: 'pay_x' }).count('*').options(PREPARED)).toEqual([{ count: 0 }]);
  });
});
