import type { BillingActivities } from '../../contracts/billing';
import { changeActivities } from './changes';
import { collectionActivities } from './collection';
import { lifecycleActivities } from './lifecycle';
import { testClockActivities } from './test-clocks';
import type { BillingActivityDeps } from './state';

export type { BillingActivityDeps } from './state';

/** The subscription activities (docs/billing.md); the workflow proxies them through the contract's BillingActivities. */
export function billingActivities(deps: BillingActivityDeps) {
  const collection = collectionActivities(deps);
  return {
    ...lifecycleActivities(deps),
    ...changeActivities(deps, collection.pay),
    payInvoice: collection.pay,
    settleInvoice: collection.settle,
    ...testClockActivities(deps),
  } satisfies BillingActivities;
}
