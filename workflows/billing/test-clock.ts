import { proxyActivities } from '@temporalio/workflow';
import type { BillingActivities, ClockAdvance } from '../../contracts/billing';

/**
 * Telling a clock's subscriptions takes a signal each: thousands for a big clock. It heartbeats after
 * every batch, so a dead worker's attempt is taken over in seconds and goes on from its last batch.
 */
const { tellClockAdvanced } = proxyActivities<BillingActivities>({
  startToCloseTimeout: '1h',
  heartbeatTimeout: '30s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s' },
});

/**
 * `test-clock/<clock_id>/<frozen_time>`: started by an advance once the clock's row has moved, it tells
 * every subscription on the clock, which then reads the clock's time and catches up. The request answers
 * at once (the clock ADVANCING); the clock is READY when every subscription on it has caught up.
 */
export async function clockAdvanceWorkflow(advance: ClockAdvance): Promise<{ told: number }> {
  return tellClockAdvanced(advance);
}
