// The simulator's notifications (docs/sandbox-processor.md#3-d-secure-in-the-sandbox, #disputes-in-the-sandbox): an event POSTed as
// JSON to the notification_url an authorize gave, signed `Simulator-Signature: t=<unix seconds>,v1=<hex
// HMAC-SHA256 of "<t>.<body>">` keyed by the api key the authorize was made with, and sent again with
// backoff while the receiver answers anything but 2xx. Each try is signed afresh, so a notification held
// for a while still arrives with a current timestamp. Tests can hold them (queued instead of sent) and
// release them, duplicated or latest first.

import { createHmac } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { ulid } from 'ulid';
import type { DisputeEvent } from './disputes';
import type { ChargeView } from './ledger';

export const SIGNATURE_HEADER = 'simulator-signature';

/** How many times one delivery is tried before it is given up. */
export const DELIVERY_TRIES = 8;

/** The wait before retry `retry` (1 = the second try): 50 ms, doubling, at most 2 s. */
export function retryDelayMs(retry: number): number {
  return Math.min(50 * 2 ** (retry - 1), 2_000);
}

export function signatureHeader(rawBody: string, apiKey: string, unixSeconds: number): string {
  const v1 = createHmac('sha256', apiKey).update(`${unixSeconds}.${rawBody}`).digest('hex');
  return `t=${unixSeconds},v1=${v1}`;
}

/** Every notification the simulator sends: a charge's (3-D Secure's end) or a dispute's (disputes.ts). */
export type SimulatorEvent = ChargeEvent | DisputeEvent;

export interface ChargeEvent {
  id: string;
  type: 'charge.authentication_completed';
  /** Unix seconds. */
  created: number;
  data: { charge: ChargeView };
}

export function authenticationCompletedEvent(charge: ChargeView, now: Date): ChargeEvent {
  return { id: `evt_sim_${ulid()}`, type: 'charge.authentication_completed', created: Math.floor(now.getTime() / 1000), data: { charge } };
}

export type DeliveryState = 'held' | 'sending' | 'delivered' | 'failed';

/** One POST of a notification and what the receiver answered (status and the start of its body), or why none came. */
export interface DeliveryAttempt {
  at: string;
  status?: number;
  response?: string;
  error?: string;
}

/** A notification as the inspection API shows it: the body exactly as sent, and every try. */
export interface NotificationView {
  event_id: string;
  type: string;
  charge_id: string;
  /** The dispute a dispute's notification is about. */
  dispute_id?: string;
  url: string;
  state: DeliveryState;
  body: string;
  attempts: DeliveryAttempt[];
}

interface NotificationRecord {
  view: NotificationView;
  /** Signs every try. Never shown. */
  apiKey: string;
}

export interface NotifierOptions {
  now: () => Date;
  /** Aborted when the simulator stops: retries end. */
  signal: AbortSignal;
  /** How long one try waits for the receiver's answer. */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 5_000;
const MAX_RESPONSE_SHOWN = 1_000;

export class Notifier {
  private records: NotificationRecord[] = [];
  private holding = false;
  private inFlight = new Set<Promise<void>>();
  // Aborted by reset(): retries of notifications from before the reset end.
  private generation = new AbortController();

  constructor(private readonly options: NotifierOptions) {}

  /**
   * Sends the event to `url`, resolving after the first try (the retries go on meanwhile), or queues it
   * while notifications are held.
   */
  notify(url: string, apiKey: string, event: SimulatorEvent): Promise<void> {
    const record: NotificationRecord = {
      view: {
        event_id: event.id, type: event.type, ...aboutOf(event), url, state: 'held', body: JSON.stringify(event), attempts: [],
      },
      apiKey,
    };
    this.records.push(record);
    if (this.holding) return Promise.resolve();
    return new Promise((afterFirstTry) => this.track(this.deliver(record, afterFirstTry).finally(afterFirstTry)));
  }

  /** Holding: notifications queue up instead of being sent. Unholding sends what queued, in order, in the background. */
  hold(holding: boolean): void {
    this.holding = holding;
    if (holding) return;
    const queued = this.takeQueued();
    this.track((async () => {
      for (const record of queued) await this.deliver(record);
    })());
  }

  isHolding(): boolean {
    return this.holding;
  }

  /**
   * Sends the queued notifications now, one after the other: latest first with `reverse`, each a second
   * time (once its first delivery ended) with `duplicate`. Resolves once each was delivered or given up.
   */
  async release(options: { duplicate?: boolean; reverse?: boolean } = {}): Promise<NotificationView[]> {
    const queued = this.takeQueued();
    if (options.reverse) queued.reverse();
    const sending = (async () => {
      for (const record of queued) {
        await this.deliver(record);
        if (options.duplicate) await this.deliver(record);
      }
    })();
    this.track(sending);
    await sending;
    return queued.map((record) => copy(record.view));
  }

  list(): NotificationView[] {
    return this.records.map((record) => copy(record.view));
  }

  /** Resolves once nothing is being sent or retried. */
  async idle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  reset(): void {
    this.generation.abort();
    this.generation = new AbortController();
    this.records = [];
    this.holding = false;
  }

  /** The held notifications, marked as being sent so that no other release picks them up too. */
  private takeQueued(): NotificationRecord[] {
    const queued = this.records.filter((record) => record.view.state === 'held');
    for (const record of queued) record.view.state = 'sending';
    return queued;
  }

  private track(work: Promise<void>): void {
    this.inFlight.add(work);
    void work.finally(() => this.inFlight.delete(work));
  }

  private async deliver(record: NotificationRecord, afterFirstTry?: () => void): Promise<void> {
    const signal = AbortSignal.any([this.options.signal, this.generation.signal]);
    record.view.state = 'sending';
    for (let attempt = 1; attempt <= DELIVERY_TRIES; attempt++) {
      if (attempt > 1) {
        try {
          await sleep(retryDelayMs(attempt - 1), undefined, { signal });
        } catch {
          return;
        }
      }
      const delivered = await this.send(record, signal);
      afterFirstTry?.();
      if (delivered) {
        record.view.state = 'delivered';
        return;
      }
    }
    record.view.state = 'failed';
  }

  private async send(record: NotificationRecord, signal: AbortSignal): Promise<boolean> {
    const now = this.options.now();
    const attempt: DeliveryAttempt = { at: now.toISOString() };
    record.view.attempts.push(attempt);
    try {
      const response = await fetch(record.view.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          [SIGNATURE_HEADER]: signatureHeader(record.view.body, record.apiKey, Math.floor(now.getTime() / 1000)),
        },
        body: record.view.body,
        redirect: 'manual',
        signal: AbortSignal.any([signal, AbortSignal.timeout(this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS)]),
      });
      attempt.status = response.status;
      attempt.response = (await response.text()).slice(0, MAX_RESPONSE_SHOWN);
      return response.ok;
    } catch (err) {
      attempt.error = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
      return false;
    }
  }
}

function aboutOf(event: SimulatorEvent): { charge_id: string; dispute_id?: string } {
  if ('dispute' in event.data) return { charge_id: event.data.dispute.charge_id, dispute_id: event.data.dispute.id };
  return { charge_id: event.data.charge.id };
}

function copy(view: NotificationView): NotificationView {
  return { ...view, attempts: view.attempts.map((attempt) => ({ ...attempt })) };
}
