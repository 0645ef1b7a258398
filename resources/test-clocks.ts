import { Static, Type } from '@sinclair/typebox';
import type { TestClockRow } from '../db/test-clocks';
import { TEST_CLOCK_STATUSES } from '../contracts/billing';
import { iso } from '../lib/timestamps';
import { Resource, Timestamp } from './schemas';

/** A sandbox's test clock (docs/billing.md#test-clocks): the time the subscriptions made on it live by. */
export const TestClockSchema = Resource('test_clock', {
  id: Type.String(),
  account_id: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  frozen_time: Type.String({ format: 'date-time' }),
  status: Type.Union(TEST_CLOCK_STATUSES.map((s) => Type.Literal(s)), { description: 'ADVANCING until every subscription on it has caught up with frozen_time' }),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export type TestClock = Static<typeof TestClockSchema>;

export function serializeTestClock(row: TestClockRow): TestClock {
  return {
    object: 'test_clock',
    id: row.id,
    account_id: row.account_id,
    name: row.name ?? null,
    frozen_time: iso(row.frozen_time)!,
    status: row.status,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}
