import { Static, Type } from '@sinclair/typebox';
import type { BillingSettings } from '../lib/billing/dunning';
import { Resource } from './schemas';

/** An account's dunning settings (docs/billing.md#dunning): the defaults until it sets its own. */
export const BillingSettingsSchema = Resource('billing_settings', {
  account_id: Type.String(),
  retry_days: Type.Array(Type.Integer(), { description: 'days after the first failed renewal each retry is made at' }),
  when_exhausted: Type.Union([Type.Literal('UNPAID'), Type.Literal('CANCELED')], { description: 'what the subscription becomes when the retries run out' }),
});

export type BillingSettingsResource = Static<typeof BillingSettingsSchema>;

export function serializeBillingSettings(accountId: string, settings: BillingSettings): BillingSettingsResource {
  return { object: 'billing_settings', account_id: accountId, retry_days: settings.retry_days, when_exhausted: settings.when_exhausted };
}
