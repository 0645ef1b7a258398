import type { ActivityDeps } from '../deps';
import type { Vault } from '../../lib/vault';

/** What the payment activities are built from: the database, the config and the card vault. */
export interface PaymentActivityDeps extends ActivityDeps {
  vault: Vault;
}
