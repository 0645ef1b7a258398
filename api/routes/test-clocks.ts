import { Type } from '@sinclair/typebox';
import { advanceTestClock, findTestClock, insertTestClock, listTestClocks } from '../../db/test-clocks';
import { newId } from '../../lib/ids';
import { startClockAdvance } from '../../workflows/billing/client';
import { ApiError } from '../errors';
import { reserveResourceId } from '../middleware/idempotency';
import { defineRoute } from '../route';
import { serializeTestClock, TestClockSchema } from '../../resources/test-clocks';
import { Obj } from '../../resources/schemas';
import { findVisible } from './environment-lookup';
import { sandboxOnly } from './subscription-checks';

const TAG = 'Billing: test clocks';

const Params = Obj({ id: Type.String({ minLength: 1, maxLength: 100 }) });
const FrozenTime = Type.String({ format: 'date-time', description: 'the clock\'s time (ISO-8601)' });

/** How far one advance may move a clock: a subscription catches up one period at a time, so this bounds the work one request starts. */
const MAX_ADVANCE_MS = 5 * 366 * 24 * 3_600_000;
/** A clock's time stays within years the periods' arithmetic and Postgres' timestamps both hold. */
const EARLIEST = Date.parse('1970-01-01T00:00:00Z');
const LATEST = Date.parse('2200-01-01T00:00:00Z');

function timeOf(value: string, path: string): Date {
  const time = Date.parse(value);
  if (Number.isNaN(time)) throw ApiError.validation([{ path, message: 'is not a date-time' }]);
  if (time < EARLIEST || time >= LATEST) throw ApiError.validation([{ path, message: 'must lie between 1970 and 2200' }]);
  return new Date(time);
}

export const testClockRoutes = [
  defineRoute({
    method: 'post',
    path: '/test-clocks',
    tag: TAG,
    summary: 'Create a test clock (sandbox only): subscriptions made on it live by its time, which only moves when advanced',
    permission: 'billing:write',
    status: 201,
    message: 'Test clock created',
    body: Obj({ frozen_time: FrozenTime, name: Type.Optional(Type.String({ minLength: 1, maxLength: 250 })) }),
    response: TestClockSchema,
    async handler({ body, access, deps, ctx }) {
      const scope = await access.forAccount();
      sandboxOnly(scope.environment, 'account_id');
      const frozenTime = timeOf(body.frozen_time, 'body/frozen_time');
      const id = await reserveResourceId(ctx, newId('clock'));
      const row = await insertTestClock(deps.db, scope.environment, { id, account_id: scope.account.id, name: body.name ?? null, frozen_time: frozenTime });
      return { data: serializeTestClock(row) };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/test-clocks',
    tag: TAG,
    summary: 'List the sandbox\'s test clocks, newest first',
    permission: 'billing:read',
    message: 'Test clocks retrieved',
    query: Obj({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 10 })) }),
    response: Type.Array(TestClockSchema),
    async handler({ query, access, deps }) {
      const scope = await access.forAccount();
      sandboxOnly(scope.environment, 'account_id');
      const rows = await listTestClocks(deps.db, scope.environment, scope.account.id, query.limit ?? 10);
      return { data: rows.map(serializeTestClock) };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/test-clocks/:id',
    tag: TAG,
    summary: 'Get one test clock: READY, or ADVANCING while a subscription on it is still catching up',
    permission: 'billing:read',
    message: 'Test clock retrieved',
    params: Params,
    response: TestClockSchema,
    async handler({ params, access, deps }) {
      const { row, env } = await findVisible(access, 'test clock', (e) => findTestClock(deps.db, e, params.id));
      sandboxOnly(env, 'account_id');
      return { data: serializeTestClock(row) };
    },
  }),

  defineRoute({
    method: 'post',
    path: '/test-clocks/:id/advance',
    tag: TAG,
    summary: 'Move a test clock forward (at most five years): each subscription on it does, in order, everything due up to the new time; answers at once, the clock ADVANCING until all have caught up',
    permission: 'billing:write',
    message: 'Test clock advancing',
    errors: ['temporal_unavailable'],
    params: Params,
    body: Obj({ frozen_time: FrozenTime }),
    response: TestClockSchema,
    async handler({ params, body, access, deps }) {
      const { row, env } = await findVisible(access, 'test clock', (e) => findTestClock(deps.db, e, params.id));
      sandboxOnly(env, 'account_id');
      const to = timeOf(body.frozen_time, 'body/frozen_time');
      const from = new Date(row.frozen_time).getTime();
      if (to.getTime() < from) throw ApiError.validation([{ path: 'body/frozen_time', message: `must not be before the clock's time (${new Date(from).toISOString()}): clocks only move forward` }]);
      if (to.getTime() - from > MAX_ADVANCE_MS) throw ApiError.validation([{ path: 'body/frozen_time', message: 'must be at most five years after the clock\'s time' }]);
      const advanced = await advanceTestClock(deps.db, env, row.id, to);
      // Moved meanwhile past `to` by a concurrent advance: refused as going back.
      if (!advanced) throw ApiError.validation([{ path: 'body/frozen_time', message: 'must not be before the clock\'s time: clocks only move forward' }]);
      await startClockAdvance(await deps.temporal(), { clockId: row.id, accountId: row.account_id, environment: env, frozenTime: to.getTime() });
      return { data: serializeTestClock(advanced) };
    },
  }),
];
