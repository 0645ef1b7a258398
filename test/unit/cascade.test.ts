import { describe, expect, it } from 'vitest';
import { ADYEN_ERROR_CODES, ADYEN_REFUSAL_CODES } from '../../activities/providers/adyen';
import { ALL_DECLINE_ROWS, declineRowOf } from '../../lib/providers/decline-rows';
import { DECLINE_CODES } from '../../activities/providers/sandbox';
import { STRIPE_DECLINE_CODES } from '../../activities/providers/stripe';
import { nextStep, walkGoesOn, type CascadeInput, type DeclineRow, type NextStep } from '../../lib/payments/cascade';

const row = (code: string, decision: DeclineRow['decision'], columns: Partial<DeclineRow> = {}): DeclineRow => ({ code, decision, ...columns });
const processingError = row('processing_error', 'soft');
const authenticationRequired = row('authentication_required', 'soft', { stepUp: true });
const stolenCard = row('stolen_card', 'hard', { doNotRetry: true });
const softButNeverElsewhere = row('a_soft_code_never_retried', 'soft', { doNotRetry: true });

const STOP_APPROVED: NextStep = { kind: 'stop', because: 'approved' };
const STOP_DECLINED: NextStep = { kind: 'stop', because: 'declined' };
const STOP_EXHAUSTED: NextStep = { kind: 'stop', because: 'exhausted' };
const NEXT: NextStep = { kind: 'next_candidate' };
const STEP_UP: NextStep = { kind: 'step_up' };

// outcome, decline row, last candidate, step-up already asked → what the walk does.
const CASES: [string, CascadeInput, NextStep][] = [
  ['stops on an approval', { outcome: 'approved', lastCandidate: false, stepUpAsked: false }, STOP_APPROVED],
  ['stops on an approval at the last candidate', { outcome: 'approved', lastCandidate: true, stepUpAsked: true }, STOP_APPROVED],
  ['stops on a hard decline with candidates left', { outcome: 'hard_decline', decline: row('insufficient_funds', 'hard'), lastCandidate: false, stepUpAsked: false }, STOP_DECLINED],
  ['stops on a do-not-retry hard decline', { outcome: 'hard_decline', decline: stolenCard, lastCandidate: false, stepUpAsked: false }, STOP_DECLINED],
  ['cascades to the next candidate on a soft decline', { outcome: 'soft_decline', decline: processingError, lastCandidate: false, stepUpAsked: false }, NEXT],
  ['fails the walk on a soft decline at the last candidate', { outcome: 'soft_decline', decline: processingError, lastCandidate: true, stepUpAsked: false }, STOP_EXHAUSTED],
  ['cascades on a transport error', { outcome: 'transport_error', lastCandidate: false, stepUpAsked: false }, NEXT],
  ['fails the walk on a transport error at the last candidate', { outcome: 'transport_error', lastCandidate: true, stepUpAsked: false }, STOP_EXHAUSTED],
  ['steps up when the row says so', { outcome: 'soft_decline', decline: authenticationRequired, lastCandidate: false, stepUpAsked: false }, STEP_UP],
  ['steps up even at the last candidate', { outcome: 'soft_decline', decline: authenticationRequired, lastCandidate: true, stepUpAsked: false }, STEP_UP],
  ['steps up only once per candidate: then cascades', { outcome: 'soft_decline', decline: authenticationRequired, lastCandidate: false, stepUpAsked: true }, NEXT],
  ['steps up only once per candidate: then fails at the last', { outcome: 'soft_decline', decline: authenticationRequired, lastCandidate: true, stepUpAsked: true }, STOP_EXHAUSTED],
  ['does not step up on a code whose row does not say so', { outcome: 'soft_decline', decline: row('authentication_required', 'soft'), lastCandidate: true, stepUpAsked: false }, STOP_EXHAUSTED],
  ['never retries a do-not-retry soft decline elsewhere', { outcome: 'soft_decline', decline: softButNeverElsewhere, lastCandidate: false, stepUpAsked: false }, STOP_DECLINED],
  ['reconciles an unknown outcome, never cascades it', { outcome: 'unknown', lastCandidate: false, stepUpAsked: false }, { kind: 'reconcile' }],
  ['waits for the customer on requires_action', { outcome: 'requires_action', lastCandidate: true, stepUpAsked: true }, { kind: 'await_authentication' }],
];

describe('the cascade rule (nextStep)', () => {
  it.each(CASES)('%s', (_, input, expected) => {
    expect(nextStep(input)).toEqual(expected);
  });

  it('keeps the payment PROCESSING only while the walk goes on to another attempt', () => {
    expect(CASES.filter(([, input]) => walkGoesOn(nextStep(input))).map(([name]) => name)).toEqual([
      'cascades to the next candidate on a soft decline', 'cascades on a transport error', 'steps up when the row says so',
      'steps up even at the last candidate', 'steps up only once per candidate: then cascades',
    ]);
  });
});

describe("the decline tables' cascade columns", () => {
  const tables: [string, Readonly<Record<string, DeclineRow>>][] = [
    ['sandbox', DECLINE_CODES], ['stripe', STRIPE_DECLINE_CODES], ['adyen refusals', ADYEN_REFUSAL_CODES], ['adyen errors', ADYEN_ERROR_CODES],
  ];

  it.each(tables)('%s: steps up exactly on authentication_required, a soft decline', (_, table) => {
    for (const [providerCode, decline] of Object.entries(table)) {
      expect(decline.stepUp === true, providerCode).toBe(decline.code === 'authentication_required');
      if (decline.stepUp) expect(decline.decision, providerCode).toBe('soft');
    }
  });

  it.each(tables)('%s: marks do-not-retry only on hard declines (they stop already: no behaviour changes)', (_, table) => {
    for (const [providerCode, decline] of Object.entries(table)) {
      if (decline.doNotRetry) expect(decline.decision, providerCode).toBe('hard');
    }
    for (const code of ['stolen_card', 'lost_card', 'fraudulent']) {
      const rows = Object.values(table).filter((d) => d.code === code);
      for (const d of rows) expect(d.doNotRetry, code).toBe(true);
    }
  });

  it('agrees across adapters on the columns of each of our codes, so the code alone finds them', () => {
    const byCode = new Map<string, string>();
    for (const decline of ALL_DECLINE_ROWS) {
      const columns = JSON.stringify([decline.stepUp === true, decline.doNotRetry === true]);
      expect(byCode.get(decline.code) ?? columns, decline.code).toBe(columns);
      byCode.set(decline.code, columns);
    }
    expect(declineRowOf('authentication_required', 'soft')).toEqual(authenticationRequired);
    expect(declineRowOf('fraudulent', 'hard')).toEqual(row('fraudulent', 'hard', { doNotRetry: true }));
    expect(declineRowOf('a_code_nobody_records', 'soft')).toEqual(row('a_code_nobody_records', 'soft'));
  });
});
