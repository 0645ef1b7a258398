import { condition, defineSignal, proxyLocalActivities, setHandler } from '@temporalio/workflow';

/** The floor worker's `noticeApplied` activity: when it ran (ms since the epoch), the moment a notice counts as applied. */
const { noticeApplied } = proxyLocalActivities<{ noticeApplied(): Promise<number> }>({ startToCloseTimeout: '10s' });

export const floorDisputeNotice = defineSignal('notice');

/**
 * The dispute floor: the least applying a processor's notices on Temporal must cost — a workflow per
 * dispute started by its first notice (signal-with-start, as ours is), each notice applied by one no-op
 * local activity. Answers when the last of `notices` was applied.
 */
export async function floorDisputeWorkflow(notices: number): Promise<number> {
  let received = 0;
  let applied = 0;
  let appliedAt = 0;
  setHandler(floorDisputeNotice, () => { received += 1; });
  while (applied < notices) {
    await condition(() => received > applied);
    appliedAt = await noticeApplied();
    applied += 1;
  }
  return appliedAt;
}
