// The cascade's columns of a recorded decline, by our decline code. An outcome carries only our code
// (ProviderOutcome), so the activity that records it finds the row here: every adapter's table that
// records the code agrees on its columns (test/unit/cascade.test.ts checks it), so the code alone decides.

import type { DeclineRow } from '../payments/cascade';
import { ADYEN_ERROR_CODES, ADYEN_REFUSAL_CODES } from './adyen/decline-codes';
import { DECLINE_CODES } from './sandbox/decline-codes';
import { STRIPE_DECLINE_CODES } from './stripe/decline-codes';

/** Every adapter's decline rows, for the check that they agree. */
export const ALL_DECLINE_ROWS: readonly DeclineRow[] = [
  ...Object.values(DECLINE_CODES), ...Object.values(STRIPE_DECLINE_CODES), ...Object.values(ADYEN_REFUSAL_CODES), ...Object.values(ADYEN_ERROR_CODES),
];

const COLUMNS_BY_CODE = new Map(ALL_DECLINE_ROWS.map((row) => [row.code, { stepUp: row.stepUp, doNotRetry: row.doNotRetry }]));

/** The row of a decline the adapter classed `decision`: its code's columns (none for a code no table records). */
export function declineRowOf(code: string, decision: DeclineRow['decision']): DeclineRow {
  const { stepUp, doNotRetry } = COLUMNS_BY_CODE.get(code) ?? {};
  return { code, decision, ...(stepUp ? { stepUp } : {}), ...(doNotRetry ? { doNotRetry } : {}) };
}
