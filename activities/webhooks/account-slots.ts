/**
 * Webhook attempts in flight per account on this worker. A tenant whose endpoints hang would otherwise
 * hold every activity slot of the webhook queue for up to a timeout each, and everyone else's events
 * would wait behind them; with a cap, the excess attempts give their slot back at once and wait
 * (docs/webhooks.md#fairness-across-accounts). Per process: each worker bounds its own slots.
 */
export class AccountSlots {
  private readonly inFlight = new Map<string, number>();

  /** `limit` 0 means no limit. */
  constructor(private readonly limit: number) {}

  /** A release function when the account has a free slot, else null (the caller must not attempt). */
  take(accountId: string): (() => void) | null {
    const held = this.inFlight.get(accountId) ?? 0;
    if (this.limit > 0 && held >= this.limit) return null;
    this.inFlight.set(accountId, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const now = (this.inFlight.get(accountId) ?? 1) - 1;
      if (now > 0) this.inFlight.set(accountId, now);
      else this.inFlight.delete(accountId);
    };
  }
}
