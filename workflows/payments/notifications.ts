import type { NotifiedOperation, ProviderEventSignal } from '../../contracts/temporal';

/**
 * Processor notifications signalled in (each stored event once), kept until the step waiting for one
 * takes it: a reconciliation or an authentication (authorize), a pending capture or void, a capture
 * watch, or the reversal of a charge given up while its customer authenticated.
 */
export class Notifications {
  private readonly waiting: ProviderEventSignal[] = [];
  private readonly signalled = new Set<string>();
  /** The charge whose capture failed after the fact: its capture notifications are stale unless a capture of ours awaits one. */
  captureFailedCharge: string | undefined;
  /**
   * Charges given up while the customer authenticated at a processor that may still report them authorized
   * (AttemptResult.lateAuthorizationWindowMs), and until when a final payment's workflow listens for that.
   */
  readonly givenUp = new Map<string, number>();

  /** Keeps a signalled notification; `captureAwaited`: a capture of ours waits for its outcome. */
  receive(event: ProviderEventSignal, captureAwaited: boolean): void {
    // Anyone reaching Temporal can signal: a malformed one must not fail the workflow task (the activity
    // applies only the stored event it names, docs/security.md).
    if (typeof event?.eventId !== 'string' || this.signalled.has(event.eventId)) return;
    this.signalled.add(event.eventId);
    // About the capture that failed after the fact (a late or repeated one): kept, it would settle the next capture.
    if (!captureAwaited && event.operation === 'capture' && event.chargeId === this.captureFailedCharge) return;
    this.waiting.push(event);
  }

  has(operation: NotifiedOperation, chargeId: string): boolean {
    return this.waiting.some((n) => n.operation === operation && n.chargeId === chargeId);
  }

  take(operation: NotifiedOperation, chargeId: string): ProviderEventSignal | undefined {
    const index = this.waiting.findIndex((n) => n.operation === operation && n.chargeId === chargeId);
    return index < 0 ? undefined : this.waiting.splice(index, 1)[0];
  }

  /** Drops every notification about a charge's capture: stale once that capture failed after the fact. */
  dropCaptures(chargeId: string): void {
    for (let i = this.waiting.length - 1; i >= 0; i--) {
      if (this.waiting[i].operation === 'capture' && this.waiting[i].chargeId === chargeId) this.waiting.splice(i, 1);
    }
  }

  /** A notification about a given-up charge that may show its authorization standing: an authorization, or the void's outcome. */
  hasLateNotice(): boolean {
    return this.lateNoticeIndex() >= 0;
  }

  takeLateNotice(): ProviderEventSignal | undefined {
    const index = this.lateNoticeIndex();
    return index < 0 ? undefined : this.waiting.splice(index, 1)[0];
  }

  private lateNoticeIndex(): number {
    return this.waiting.findIndex((n) => this.givenUp.has(n.chargeId) && (n.operation === 'authorize' || n.operation === 'void'));
  }
}
