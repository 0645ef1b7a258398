/**
 * The stuck-payment watchdog: one long-running workflow per namespace, started (or found running) by
 * every worker at boot. Shared by the starter and the workflow; free of Node and I/O.
 */
export const STUCK_PAYMENT_WATCHDOG_ID = 'stuck-payment-watchdog';

export interface StuckPaymentWatchdogInput {
  /** How often to look for stuck payments. */
  checkEveryMs: number;
  /** Overrides the workers' STUCK_PAYMENT_THRESHOLD (tests); unset in production. */
  thresholdMs?: number;
}

export interface StuckPaymentCheck {
  /** Payments newly notified by this check (already-notified ones are not repeated). */
  notified: string[];
  /** Payments found PROCESSING longer than the threshold, notified now or before. */
  stuck: number;
}
