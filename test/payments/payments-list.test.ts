import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createMerchant, type Merchant, startStack, type TestStack } from '../support/stack';
import { seedPayments, walkList } from '../../bench/list';
import { COUNTED_UP_TO } from '../../db/page';
import { listPayments, SHOWN_PAYMENT_COLUMNS } from '../../db/payments';

// The payments list walked by cursor (docs/api-conventions.md#pagination). Payments are written in bulk
// straight into the table (bench/list.ts): a list reads rows only, and a walk needs many of them.
let stack: TestStack;
let m: Merchant;
let newestFirst: { id: string; status: string }[];

const seed = (merchant: Merchant, count: number) => seedPayments(stack.db, {
  env: 'production', accountId: merchant.account.id, count, log: () => {},
});

beforeAll(async () => {
  stack = await startStack();
  m = await createMerchant(stack);
  await seed(m, 40);
  // The five newest payments created in the same millisecond: the id orders them (a total order), and
  // pages of 3 cut through them, so a cursor on created_at alone would skip or repeat some.
  const tied = await stack.db('live.payments').where({ account_id: m.account.id }).orderBy('id').limit(5).pluck('id');
  await stack.db('live.payments').whereIn('id', tied).update({ created_at: new Date() });
  newestFirst = await stack.db('live.payments').where({ account_id: m.account.id })
    .orderBy('created_at', 'desc').orderBy('id', 'desc').select('id', 'status');
});
afterAll(async () => { await stack?.close(); });

const list = (query: string, merchant = m) => stack.http.get(`/v1/payments?${query}`).set(bearer(merchant.secretKey));

/** Follows `starting_after` (or `ending_before`) from the first page to the end; every page's ids, in order. */
async function walk(query: string, direction: 'starting_after' | 'ending_before', from?: string): Promise<string[][]> {
  const pages: string[][] = [];
  let cursor = from;
  for (;;) {
    const res = await list(`${query}${cursor ? `&${direction}=${cursor}` : ''}`);
    expect(res.status).toBe(200);
    const ids = res.body.data.map((p: { id: string }) => p.id);
    pages.push(ids);
    if (!res.body.has_more) return pages;
    expect(ids).toHaveLength(Number(/limit=(\d+)/.exec(query)![1]));
    cursor = direction === 'starting_after' ? ids[ids.length - 1] : ids[0];
  }
}

describe('listing payments by cursor', () => {
  it('walks forward with starting_after: every payment once, newest first, has_more false only on the last page', async () => {
    const first = await list('limit=3');
    expect(first.body).toMatchObject({ success: true, limit: 3, page: 1, total: 40, pages: 14, has_more: true });
    const pages = await walk('limit=3', 'starting_after');
    expect(pages.flat()).toEqual(newestFirst.map((p) => p.id));
    expect(pages.map((p) => p.length)).toEqual([...Array(13).fill(3), 1]);
    const next = await list(`limit=3&starting_after=${pages[0][2]}`);
    // A cursor page has no page number and is not counted.
    expect(next.body).toMatchObject({ page: null, pages: null, total: null, has_more: true, limit: 3 });
  });

  it('walks back with ending_before from the oldest payment to the newest, each page newest first', async () => {
    const oldest = newestFirst[newestFirst.length - 1].id;
    const pages = await walk('limit=6', 'ending_before', oldest);
    expect(pages.reverse().flat()).toEqual(newestFirst.slice(0, -1).map((p) => p.id));
    const top = await list(`limit=6&ending_before=${newestFirst[6].id}`);
    expect(top.body.data.map((p: { id: string }) => p.id)).toEqual(newestFirst.slice(0, 6).map((p) => p.id));
    expect(top.body.has_more).toBe(false);
  });

  it('walks within a status filter, forward and back', async () => {
    const succeeded = newestFirst.filter((p) => p.status === 'SUCCEEDED').map((p) => p.id);
    expect(succeeded.length).toBeGreaterThan(6);
    const forward = await walk('status=SUCCEEDED&limit=3', 'starting_after');
    expect(forward.flat()).toEqual(succeeded);
    const back = await walk('status=SUCCEEDED&limit=3', 'ending_before', succeeded[succeeded.length - 1]);
    expect(back.reverse().flat()).toEqual(succeeded.slice(0, -1));
  });

  it('answers an empty last page when the cursor is the oldest payment', async () => {
    const res = await list(`starting_after=${newestFirst[newestFirst.length - 1].id}`);
    expect(res.body).toMatchObject({ data: [], has_more: false });
  });

  it('refuses, as 422 at the parameter, a cursor that is not one of the account\'s payments, another account\'s included', async () => {
    const other = await createMerchant(stack);
    await seed(other, 1);
    const foreign = await stack.db('live.payments').where({ account_id: other.account.id }).first('id');
    for (const [param, id] of [['starting_after', foreign.id], ['ending_before', foreign.id], ['starting_after', 'pay_01J0000000000000000000000']]) {
      const res = await list(`${param}=${id}`);
      expect(res.status).toBe(422);
      expect(res.body).toMatchObject({ success: false, error: { code: 422, details: { reason: 'invalid_pagination', fields: [{ path: `query/${param}`, message: 'no such payment in this account' }] } } });
    }
    // The same payment is a cursor for its own account.
    expect((await list(`starting_after=${foreign.id}`, other)).body).toMatchObject({ data: [], has_more: false });
  });

  it('refuses malformed cursors, two cursors, and a cursor with a page number', async () => {
    const id = newestFirst[3].id;
    for (const [query, path] of [
      ['starting_after=ch_01J0000000000000000000000', 'query/starting_after'],
      ['ending_before=pay_%21%21', 'query/ending_before'],
      ['starting_after=', 'query/starting_after'],
    ]) {
      const res = await list(query);
      expect(res.status, query).toBe(400);
      expect(res.body.error.details.reason).toBe('validation_failed');
      expect(res.body.error.details.fields.map((f: { path: string }) => f.path)).toContain(path);
    }
    // Each well-formed, but together no place in the list: 422 (the schema cannot say it).
    for (const [query, path] of [[`starting_after=${id}&ending_before=${id}`, 'query/ending_before'], [`starting_after=${id}&page=2`, 'query/page']]) {
      const res = await list(query);
      expect(res.status, query).toBe(422);
      expect(res.body.error.details).toMatchObject({ reason: 'invalid_pagination', fields: [{ path }] });
    }
  });

  it('takes limit 1 to 100', async () => {
    for (const limit of [0, 101, -1]) expect((await list(`limit=${limit}`)).status).toBe(400);
    expect((await list('limit=1')).body.data).toHaveLength(1);
    expect((await list('limit=100')).body).toMatchObject({ limit: 100, has_more: false, total: 40 });
    expect((await list(`limit=0&starting_after=${newestFirst[0].id}`)).status).toBe(400);
  });

  it('still pages by number, with has_more, the last page included', async () => {
    const third = await list('limit=15&page=3');
    expect(third.body).toMatchObject({ page: 3, pages: 3, total: 40, has_more: false });
    expect(third.body.data.map((p: { id: string }) => p.id)).toEqual(newestFirst.slice(30).map((p) => p.id));
    expect((await list('limit=15&page=2')).body.has_more).toBe(true);
  });

  it('reads only the columns its answer shows, and answers each payment as GET does but for its client_secret', async () => {
    const listed = await listPayments(stack.db, 'production', m.account.id, {}, { page: 1 }, 5);
    for (const row of listed!.rows) expect(Object.keys(row).sort()).toEqual([...SHOWN_PAYMENT_COLUMNS].sort());
    const page = (await list('limit=5')).body.data;
    for (const payment of page) {
      const { client_secret: secret, temporal, ...read } = (await stack.http.get(`/v1/payments/${payment.id}`).set(bearer(m.secretKey))).body.data;
      expect(secret).toEqual(expect.any(String));
      expect(temporal).toBeDefined();
      expect(payment).toEqual(read);
    }
  });

  it(`counts up to ${COUNTED_UP_TO} matches; beyond, total and pages are null and has_more tells`, async () => {
    const big = await createMerchant(stack);
    await seed(big, COUNTED_UP_TO + 1);
    const res = await list('limit=100', big);
    expect(res.body).toMatchObject({ total: null, pages: null, page: 1, has_more: true });
    expect(res.body.data).toHaveLength(100);
    const rare = await stack.db('live.payments').where({ account_id: big.account.id, status: 'CANCELED' }).count<{ count: string }[]>({ count: '*' });
    expect((await list('status=CANCELED&limit=100', big)).body.total).toBe(Number(rare[0].count));
  });

  it('is walked by the list bench page after page: each cursor is the last payment of the page before it', async () => {
    // The bench's load driver (bench/list.ts) against this API, unlimited, on an account with several
    // pages of 100 per status: a driver that forgot where its walk was sent only first pages.
    const unlimited = await startStack({ RATE_LIMIT_RPS: '0' });
    try {
      const walked = await createMerchant(unlimited);
      await seedPayments(unlimited.db, { env: 'production', accountId: walked.account.id, count: 700, log: () => {} });
      const byStatus = new Map<string, string[]>();
      const rows = await unlimited.db('live.payments').where({ account_id: walked.account.id })
        .orderBy('created_at', 'desc').orderBy('id', 'desc').select('id', 'status');
      for (const r of rows) byStatus.set(r.status, [...(byStatus.get(r.status) ?? []), r.id]);
      const paths: string[] = [];
      const result = await walkList(unlimited.baseUrl, walked.secretKey, 800, 2, (path) => paths.push(path));
      expect(result.operations).toBe(paths.length);
      const cursors = paths.map((path) => new URL(path, 'http://x').searchParams)
        .filter((q) => q.has('starting_after')).map((q) => ({ status: q.get('status')!, after: q.get('starting_after')! }));
      // SUCCEEDED (about 490 of 700) takes five pages: four of its walks' requests carry a cursor.
      expect(cursors.length).toBeGreaterThan(paths.length / 3);
      for (const { status, after } of cursors) {
        const position = byStatus.get(status)!.indexOf(after);
        expect(position % 100, `${status} after ${after}`).toBe(99);
      }
      expect(result.firstPages.count).toBeLessThan(result.all.count);
    } finally {
      await unlimited.close();
    }
  });

  it('documents the cursors and has_more in the OpenAPI document', async () => {
    const doc = (await stack.http.get('/v1/openapi.json')).body;
    const op = doc.paths['/v1/payments'].get;
    expect(op.parameters.map((p: { name: string }) => p.name)).toEqual(expect.arrayContaining(['starting_after', 'ending_before', 'page', 'limit']));
    const envelope = op.responses['200'].content['application/json'].schema;
    expect(envelope.properties.has_more).toMatchObject({ type: 'boolean' });
    expect(envelope.properties.total.type).toEqual(['integer', 'null']);
  });
});
