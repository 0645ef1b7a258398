/**
 * Dunning (docs/billing.md#dunning): after a renewal's payment fails, when to try again, and when to
 * stop. Decline-aware: a code that says the card will never work again stops at once; insufficient
 * funds and soft declines wait for the next retry. Pure; the settings are the account's.
 */
import { daysToMs } from './periods';

export interface BillingSettings {
  /** Days after the first failure each retry is made at (default 1, 3, 5, 7). */
  retry_days: number[];
  /** What the subscription becomes when the retries run out. */
  when_exhausted: 'UNPAID' | 'CANCELED';
}

export const DEFAULT_BILLING_SETTINGS: BillingSettings = { retry_days: [1, 3, 5, 7], when_exhausted: 'UNPAID' };

/** The account setting's key in core.account_settings (its value: BillingSettings as JSON, validated by the API). */
export const BILLING_SETTINGS_KEY = 'billing';

/** Declines no retry can change: the card is gone or was never good. */
export const FINAL_DECLINE_CODES: ReadonlySet<string> = new Set(['stolen_card', 'lost_card', 'fraudulent', 'invalid_number', 'pickup_card', 'expired_card', 'invalid_account']);

/** The stored setting, or the defaults for what it does not say (or when it is absent or unreadable). */
export function parseBillingSettings(stored: string | undefined): BillingSettings {
  if (!stored) return DEFAULT_BILLING_SETTINGS;
  try {
    const value = JSON.parse(stored) as Partial<BillingSettings>;
    return { ...DEFAULT_BILLING_SETTINGS, ...value };
  } catch {
    return DEFAULT_BILLING_SETTINGS;
  }
}

export type DunningStep = { retryAt: number } | { exhausted: true; reason: 'final_decline' | 'retries_exhausted' };

/**
 * After the `failures`-th failed attempt (1 for the renewal itself) that ended with `declineCode`: the
 * next retry, counted from the first failure, or the end of dunning.
 */
export function nextDunningStep(settings: BillingSettings, firstFailureAt: number, failures: number, declineCode: string | null): DunningStep {
  if (declineCode && FINAL_DECLINE_CODES.has(declineCode)) return { exhausted: true, reason: 'final_decline' };
  const day = settings.retry_days[failures - 1];
  if (day === undefined) return { exhausted: true, reason: 'retries_exhausted' };
  return { retryAt: firstFailureAt + daysToMs(day) };
}
