import { continueAsNew, proxyActivities, sleep, workflowInfo } from '@temporalio/workflow';
import type { StuckPaymentWatchdogInput, WatchdogActivities } from '../../contracts/watchdog';

const { notifyStuckPayments } = proxyActivities<WatchdogActivities>({
  startToCloseTimeout: '1m',
  // Postgres being down only delays the next look; keep trying.
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' },
});

/** Checks per run before continuing as new, so the history stays short however long it runs. */
const CHECKS_PER_RUN = 200;

/**
 * Every `checkEveryMs`, notifies each account of its payments stuck in PROCESSING longer than the
 * threshold (one `payment.stuck` notification per payment, however many checks see it). Runs forever.
 */
export async function stuckPaymentWatchdogWorkflow(input: StuckPaymentWatchdogInput): Promise<void> {
  for (let i = 0; i < CHECKS_PER_RUN && !workflowInfo().continueAsNewSuggested; i++) {
    await notifyStuckPayments({ thresholdMs: input.thresholdMs });
    await sleep(input.checkEveryMs);
  }
  await continueAsNew<typeof stuckPaymentWatchdogWorkflow>(input);
}
