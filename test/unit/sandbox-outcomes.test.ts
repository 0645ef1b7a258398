import { describe, expect, it } from 'vitest';
import { outcomeOf } from '../../lib/providers/sandbox/outcomes';

const error = (code: string) => ({ error: { code, message: 'x' } });

describe('the sandbox adapter reading a 5xx', () => {
  it.each([
    [503, error('provider_unavailable'), 'transport_error'],
    [500, error('internal_error'), 'unknown'],
    [502, undefined, 'unknown'],
    [503, error('internal_error'), 'unknown'],
    [504, error('provider_unavailable'), 'unknown'],
  ])('HTTP %i %j is %s: only the outage answer says nothing was done', (status, body, kind) => {
    expect(outcomeOf(status, body).kind).toBe(kind);
  });
});
