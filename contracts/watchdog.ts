/**
 * The stuck-payment watchdog's contract (docs/operators.md): one long-running workflow per namespace,
 * started (or found running) by every worker at boot, and the activity it calls. Imported by the
 * workflow (inside Temporal's sandbox) and by the worker and activities, so it stays free of Node and I/O.
 */

export const STUCK_PAYMENT_WATCHDOG_ID = 'stuck-payment-watchdog';

export interface StuckPaymentWatchdogInput {
  /** How often to look for stuck payments. */
  checkEveryMs: number;
  /** Overrides the workers' STUCK_PAYMENT_THRESHOLD (tests); unset in production. */
  thresholdMs?: number;
}

/** Looks at least every minute, and at least twice per threshold. */
export function watchdogInterval(thresholdMs: number): number {
  return Math.max(1000, Math.min(60_000, Math.floor(thresholdMs / 2)));
}

export interface StuckPaymentCheck {
  /** Payments newly notified by this check (already-notified ones are not repeated). */
  notified: string[];
  /** Payments found PROCESSING longer than the threshold, notified now or before. */
  stuck: number;
}

/**
 * The notification for a stuck payment has an id derived from the payment's, so however many checks
 * (or retried activities) see the payment, it gets exactly one.
 */
export const stuckNotificationId = (paymentId: string) => `ntf_${paymentId.replace(/^pay_/, '')}`;

/** The payment a stuck notification is about (the inverse of stuckNotificationId). */
export const stuckPaymentOf = (notificationId: string) => `pay_${notificationId.replace(/^ntf_/, '')}`;

/** The activity the watchdog calls; activities/stuck-payments.ts builds it (`satisfies` this). */
export interface WatchdogActivities {
  /** One `payment.stuck` notification per payment PROCESSING (untouched) for longer than the threshold. */
  notifyStuckPayments(args?: { thresholdMs?: number }): Promise<StuckPaymentCheck>;
}
