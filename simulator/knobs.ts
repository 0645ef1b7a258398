// The simulator's failure knobs (docs/sandbox-processor.md): outages, latency, lost answers and forced
// declines, set per request by `X-Simulate` or for every request by POST /_inspect/faults. How they are
// read and how a decline is drawn from them, apart from the server that applies them.

import { AUTHORIZATION_DECLINE_CODES } from '../lib/providers/sandbox/decline-codes';
import { invalid } from './requests';

export interface SimulateKnobs {
  outage?: boolean;
  latency_ms?: number;
  blackhole?: boolean;
  /** The work is done and recorded, then answered 500: a processor that fails after charging (a repeat of the key gets the real answer). */
  error_after_work?: boolean;
  decline_rate?: number;
  /** Share of new authorizations declined with the soft `issuer_unavailable` (another provider may approve). */
  soft_decline_rate?: number;
  /** A challenged charge declines with this code after the cardholder authenticated (instead of the card's own outcome). */
  decline_after_authentication?: string;
  /** Every new authorization is declined with this code, whatever the card (one of AUTHORIZATION_DECLINE_CODES). */
  decline_code?: string;
  /** How long after a dispute test card's capture its dispute comes (default 2 s). */
  dispute_after_ms?: number;
  /** How long a dispute gives to answer, from its creation (default 7 days). */
  dispute_due_in_ms?: number;
  /** How long a submitted dispute waits for its decision, and an early fraud warning before it closes (default 1 s). */
  dispute_decision_ms?: number;
}

/** The largest value of each dispute timing knob: an hour, except the deadline (21 days, within a Node timer's reach). */
export const DISPUTE_KNOB_MAX_MS = { dispute_after_ms: 3_600_000, dispute_due_in_ms: 1_814_400_000, dispute_decision_ms: 3_600_000 } as const;

/** What a /v1 request carries past authentication: its knobs and the api key it was made with. */
export interface SimulatorState {
  knobs: SimulateKnobs;
  apiKey: string;
}

const MAX_LATENCY_MS = 60_000;
const KNOBS = ['outage', 'latency_ms', 'blackhole', 'error_after_work', 'decline_rate', 'soft_decline_rate', 'decline_after_authentication', 'decline_code',
  ...Object.keys(DISPUTE_KNOB_MAX_MS)];
const DECLINE_CODES: readonly string[] = AUTHORIZATION_DECLINE_CODES;

export function parseKnobs(header: string): SimulateKnobs {
  if (!header) return {};
  let value: unknown;
  try {
    value = JSON.parse(header);
  } catch {
    throw invalid('X-Simulate must be a JSON object');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid('X-Simulate must be a JSON object');
  const knobs = value as Record<string, unknown>;
  const { outage, latency_ms, blackhole, error_after_work, decline_rate, soft_decline_rate, decline_after_authentication: after } = knobs;
  const unknown = Object.keys(knobs).filter((key) => !KNOBS.includes(key));
  if (after !== undefined && !(typeof after === 'string' && /^[a-z_]{1,40}$/.test(after))) throw invalid('decline_after_authentication must be a decline code');
  if (unknown.length > 0) throw invalid(`unknown X-Simulate knob ${unknown.join(', ')}`);
  if (knobs.decline_code !== undefined && !(typeof knobs.decline_code === 'string' && DECLINE_CODES.includes(knobs.decline_code))) {
    throw invalid(`decline_code must be one of ${DECLINE_CODES.join(', ')}`);
  }
  if (outage !== undefined && typeof outage !== 'boolean') throw invalid('outage must be a boolean');
  if (blackhole !== undefined && typeof blackhole !== 'boolean') throw invalid('blackhole must be a boolean');
  if (error_after_work !== undefined && typeof error_after_work !== 'boolean') throw invalid('error_after_work must be a boolean');
  if (latency_ms !== undefined && !(Number.isInteger(latency_ms) && (latency_ms as number) >= 0 && (latency_ms as number) <= MAX_LATENCY_MS)) {
    throw invalid(`latency_ms must be an integer from 0 to ${MAX_LATENCY_MS}`);
  }
  for (const [name, max] of Object.entries(DISPUTE_KNOB_MAX_MS)) {
    const ms = knobs[name];
    if (ms !== undefined && !(Number.isInteger(ms) && (ms as number) >= 0 && (ms as number) <= max)) throw invalid(`${name} must be an integer from 0 to ${max}`);
  }
  for (const [name, rate] of Object.entries({ decline_rate, soft_decline_rate })) {
    if (rate !== undefined && !(typeof rate === 'number' && rate >= 0 && rate <= 1)) throw invalid(`${name} must be a number from 0 to 1`);
  }
  return knobs as SimulateKnobs;
}

/**
 * The decline the rate knobs force on a new authorization, from one draw in [0, 1): below decline_rate
 * the hard `card_declined`, then for the next soft_decline_rate of the interval the soft
 * `issuer_unavailable` (so each is its own share of authorizations when the other is 0).
 */
export function drawnDecline(knobs: SimulateKnobs, draw: number): string | undefined {
  const hard = knobs.decline_rate ?? 0;
  if (draw < hard) return 'card_declined';
  if (draw < hard + (knobs.soft_decline_rate ?? 0)) return 'issuer_unavailable';
  return undefined;
}
