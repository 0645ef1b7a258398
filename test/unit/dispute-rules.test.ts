import { describe, expect, it } from 'vitest';
import { takesStatus } from '../../lib/providers/disputes';
import { disputeIdOf } from '../../lib/ids';

const at = (iso: string) => Date.parse(iso);

describe('a dispute notice\'s status', () => {
  it('moves a dispute on, never back: a created that arrives after the decision changes nothing', () => {
    expect(takesStatus('NEEDS_RESPONSE', at('2026-03-01T00:00:00Z'), 'UNDER_REVIEW', '2026-03-02T00:00:00Z')).toBe(true);
    expect(takesStatus('WON', at('2026-03-05T00:00:00Z'), 'NEEDS_RESPONSE', '2026-03-01T00:00:00Z')).toBe(false);
    expect(takesStatus('UNDER_REVIEW', at('2026-03-05T00:00:00Z'), 'NEEDS_RESPONSE', '2026-03-09T00:00:00Z')).toBe(false);
    // An inquiry may become a chargeback.
    expect(takesStatus('WARNING_NEEDS_RESPONSE', at('2026-03-01T00:00:00Z'), 'NEEDS_RESPONSE', '2026-03-02T00:00:00Z')).toBe(true);
  });
  it('of two decisions, takes the one the processor dated later (a second chargeback after a reversal), not an older one', () => {
    expect(takesStatus('WON', at('2026-03-05T00:00:00Z'), 'LOST', '2026-03-20T00:00:00Z')).toBe(true);
    expect(takesStatus('LOST', at('2026-03-20T00:00:00Z'), 'WON', '2026-03-05T00:00:00Z')).toBe(false);
    expect(takesStatus('LOST', at('2026-03-20T00:00:00Z'), 'LOST', '2026-03-25T00:00:00Z')).toBe(false);
  });
});

describe('a dispute\'s id', () => {
  it('is the same for every notice of one dispute of one config, and differs across configs', () => {
    const id = disputeIdOf('ppc_1', 'du_1');
    expect(id).toMatch(/^dp_[0-9A-Za-z]{26}$/);
    expect(disputeIdOf('ppc_1', 'du_1')).toBe(id);
    expect(disputeIdOf('ppc_2', 'du_1')).not.toBe(id);
    expect(disputeIdOf('ppc_1', 'du_2')).not.toBe(id);
  });
});
