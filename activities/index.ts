import type { ActivityDeps } from './deps';
import { apiKeyActivities } from './api-keys';
import { webhookActivities } from './webhooks';
import { paymentActivities } from './payments';
import { refundActivities } from './refunds';
import { checkoutActivities } from './checkout';
import { billingActivities } from './billing';
import { disputeActivities } from './disputes';
import { stuckPaymentActivities } from './stuck-payments';
import { vaultActivities } from './vault';
import { Vault } from '../lib/vault';

// Activity modules import ActivityDeps from ./deps, not from here (this module imports them).
export type { ActivityDeps };

/** Every activity, built from its dependencies (tests hand in real ones; nothing is module-mocked). */
export function createActivities(deps: ActivityDeps) {
  const vault = new Vault(deps.config.vaultKeys);
  return {
    ...apiKeyActivities(deps.db),
    ...webhookActivities(deps),
    ...paymentActivities({ ...deps, vault }),
    ...refundActivities({ ...deps, vault }),
    ...checkoutActivities({ ...deps, vault }),
    ...billingActivities({ ...deps, vault }),
    ...disputeActivities({ ...deps, vault }),
    ...stuckPaymentActivities(deps),
    ...vaultActivities({ ...deps, vault }),
  };
}

export type Activities = ReturnType<typeof createActivities>;
