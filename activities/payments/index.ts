import type { PaymentActivities } from '../../contracts/payments';
import { attemptActivities, firstAttemptWithRow } from './attempts';
import { attentionActivities } from './attention';
import { authenticationActivities } from './authentication';
import { captureFailureActivities } from './capture-failure';
import { commandActivities } from './commands';
import { lateAuthorizationActivities } from './late-authorization';
import type { PaymentActivityDeps } from './deps';
import { recordActivities } from './records';

export type { PaymentActivityDeps };

/**
 * The activities of the payment workflow (contracts/payments.ts), by step: the payment's
 * record and routing plans, the attempts at the providers, and the commands after a walk.
 */
export function paymentActivities(deps: PaymentActivityDeps): PaymentActivities {
  const { createPaymentAndPlan, ...records } = recordActivities(deps);
  const { authorize, prepareCharge, ...attempts } = attemptActivities(deps);
  return {
    ...records,
    ...attempts,
    createPaymentPlanAndAuthorize: firstAttemptWithRow(createPaymentAndPlan, authorize, prepareCharge),
    ...commandActivities(deps),
    ...captureFailureActivities(deps),
    ...authenticationActivities(deps),
    ...lateAuthorizationActivities(deps),
    ...attentionActivities(deps),
  } satisfies PaymentActivities;
}
