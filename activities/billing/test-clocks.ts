import { Context } from '@temporalio/activity';
import { markCaughtUp } from '../../db/test-clocks';
import { subscriptionsOnClock } from '../../db/subscriptions';
import { tellClockAdvanced } from '../../workflows/billing/client';
import { ENDED_SUBSCRIPTION_STATUSES, type ClockAdvance, type SubscriptionRef } from '../../contracts/billing';
import { temporalOf, type BillingActivityDeps } from './state';

/**
 * Signals sent at once: enough to keep the server busy, few enough that none waits out its deadline
 * behind the others (10,000 at once did, and the advance failed half told).
 */
const TELL_BATCH = 100;

/** A test clock's side of the subscriptions (docs/billing.md#test-clocks). */
export function testClockActivities(deps: BillingActivityDeps) {
  return {
    async caughtUp(ref: SubscriptionRef, testClockId: string, time: number): Promise<void> {
      await markCaughtUp(deps.db, ref.environment, testClockId, ref.subscriptionId, new Date(time));
    },

    /**
     * Tells the subscriptions still running on the clock, in the order of their ids, a batch at a time;
     * the heartbeat carries the last id told, so that a retry goes on after it.
     */
    async tellClockAdvanced(advance: ClockAdvance): Promise<{ told: number }> {
      const ctx = Context.current();
      const after = String(ctx.info.heartbeatDetails ?? '');
      const ids = (await subscriptionsOnClock(deps.db, advance.environment, advance.clockId))
        .filter((s) => !ENDED_SUBSCRIPTION_STATUSES.includes(s.status) && s.id > after)
        .map((s) => s.id).sort();
      const client = await temporalOf(deps);
      for (let i = 0; i < ids.length; i += TELL_BATCH) {
        const batch = ids.slice(i, i + TELL_BATCH);
        await tellClockAdvanced(client, batch);
        ctx.heartbeat(batch.at(-1));
      }
      return { told: ids.length };
    },
  };
}
