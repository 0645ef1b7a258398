import type { DisputeActivities } from '../../contracts/disputes';
import { answerActivities } from './answers';
import { noticeActivities } from './notices';
import type { DisputeActivityDeps } from './state';

/** The dispute activities (docs/disputes.md); the workflow proxies them through the contract's DisputeActivities. */
export function disputeActivities(deps: DisputeActivityDeps) {
  return { ...noticeActivities(deps), ...answerActivities(deps) } satisfies DisputeActivities;
}
