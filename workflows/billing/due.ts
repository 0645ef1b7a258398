import { ENDED_SUBSCRIPTION_STATUSES, type SubscriptionClock } from '../../contracts/billing';
import { INCOMPLETE_EXPIRY_MS, NOTICE_BEFORE_MS } from '../../lib/billing/periods';

/** The next thing a subscription has to do, and when (epoch ms on the subscription's clock). */
export type Due =
  | { kind: 'renew'; at: number }
  | { kind: 'pay'; at: number }
  | { kind: 'expire'; at: number }
  | { kind: 'notice'; at: number; notice: 'invoice.upcoming' | 'subscription.trial_will_end' };

/**
 * The earliest of what the subscription waits for. Taken in time order, so that a test clock moved a
 * year ahead replays the year as it would have happened: each retry before the renewal that follows it,
 * each notice before its renewal.
 */
export function nextDue(clock: SubscriptionClock): Due | undefined {
  const candidates: Due[] = [];
  const { status, collecting } = clock;
  if (collecting && !collecting.waiting && collecting.nextAttemptAt !== null) candidates.push({ kind: 'pay', at: collecting.nextAttemptAt });
  // An ended subscription only collects what it still has to (a final invoice).
  if (ENDED_SUBSCRIPTION_STATUSES.includes(status)) return earliest(candidates);
  if (status === 'INCOMPLETE') {
    candidates.push({ kind: 'expire', at: clock.createdAt + INCOMPLETE_EXPIRY_MS });
    return earliest(candidates);
  }
  candidates.push({ kind: 'renew', at: clock.currentPeriodEnd });
  const notices = !clock.cancelAtPeriodEnd && (status === 'ACTIVE' || status === 'TRIALING' || status === 'PAST_DUE');
  if (notices && !clock.noticesSent.includes('invoice.upcoming') && !clock.paused) {
    candidates.push({ kind: 'notice', at: clock.currentPeriodEnd - NOTICE_BEFORE_MS, notice: 'invoice.upcoming' });
  }
  if (status === 'TRIALING' && clock.trialEnd !== null && !clock.noticesSent.includes('subscription.trial_will_end')) {
    candidates.push({ kind: 'notice', at: clock.trialEnd - NOTICE_BEFORE_MS, notice: 'subscription.trial_will_end' });
  }
  return earliest(candidates);
}

function earliest(candidates: Due[]): Due | undefined {
  // Notices first on a tie: they announce what happens at the same moment.
  const order = { notice: 0, pay: 1, expire: 2, renew: 3 } as const;
  return candidates.sort((a, b) => a.at - b.at || order[a.kind] - order[b.kind])[0];
}
