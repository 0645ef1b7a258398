// The payment scenario's webhook receiver, in the driver's process (its CPU counts as the driver's): it
// passes an endpoint's handshake, answers every delivery 200, and tells when the deliveries a slice's
// payments caused have all arrived, so that their work is charged to the slice that caused it.

import { percentile, round } from './measure';
import { webhookSink } from './stack';

/** What a payment's delivery is known by: its event type and the payment's id. */
const keyOf = (type: string, paymentId: string) => `${type} ${paymentId}`;

export interface Receiver {
  /** Where the endpoint points. */
  url: string;
  /** A payment was answered at `answeredAt` (performance.now()); its `type` event is to arrive. */
  expect: (type: string, paymentId: string, answeredAt: number) => void;
  /**
   * Resolves once every expected delivery has arrived, with each one's lag from its payment's answer (ms);
   * rejects, naming how many are missing, after `timeoutMs`.
   */
  settle: (timeoutMs: number) => Promise<number[]>;
  close: () => void;
}

export async function startReceiver(): Promise<Receiver> {
  /** Arrival times of the deliveries no payment has claimed yet (those of payments not yet answered, or not measured). */
  const arrived = new Map<string, number>();
  const expected = new Map<string, number>();
  const lags: number[] = [];
  let wake = () => {};
  const { server, url } = await webhookSink((body) => {
    const key = keyOf(String(body.type), String(body.data?.object?.id));
    const answeredAt = expected.get(key);
    if (answeredAt === undefined) {
      arrived.set(key, performance.now());
      return;
    }
    expected.delete(key);
    lags.push(performance.now() - answeredAt);
    if (!expected.size) wake();
  });
  return {
    url: `${url}/hook`,
    expect: (type, paymentId, answeredAt) => {
      const key = keyOf(type, paymentId);
      const at = arrived.get(key);
      // Arrived before the driver read the answer: a lag of 0 rather than a negative one.
      if (at !== undefined) {
        arrived.delete(key);
        lags.push(Math.max(0, at - answeredAt));
      } else {
        expected.set(key, answeredAt);
      }
    },
    settle: async (timeoutMs) => {
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          new Promise<void>((resolve) => { wake = resolve; if (!expected.size) resolve(); }),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error(`payment: ${expected.size} webhook deliveries missing ${timeoutMs / 1000} s after their payments' answers`)), timeoutMs);
          }),
        ]);
      } finally {
        clearTimeout(timer);
      }
      return lags.splice(0);
    },
    close: () => { server.close(); },
  };
}

/** The p50 and p99 of delivery lags, in ms. */
export function lagSummary(lags: number[]) {
  const sorted = [...lags].sort((a, b) => a - b);
  return { delivery_lag_p50_ms: round(percentile(sorted, 50)), delivery_lag_p99_ms: round(percentile(sorted, 99)) };
}
