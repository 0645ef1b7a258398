import { describe, expect, it } from 'vitest';
import { AUDIT_ACTIONS, AUDIT_EXEMPT, auditKey } from '../../api/audit-actions';
import { CHANGED, redact } from '../../api/audit-trail';
import { ROUTES } from '../../api/routes';

/**
 * The audit map (api/audit-actions.ts) against the route table: a route that changes something is either
 * audited or exempt on purpose, with its reason written beside it. A new route fails here until decided.
 */
const MUTATING = ROUTES.filter((r) => r.method !== 'get').map(auditKey);

describe('the audit map', () => {
  it('lists or exempts every route that changes something', () => {
    const undecided = MUTATING.filter((key) => !(key in AUDIT_ACTIONS) && !AUDIT_EXEMPT.has(key));
    expect(undecided, 'add these to AUDIT_ACTIONS, or to AUDIT_EXEMPT with the reason').toEqual([]);
  });

  it('names only routes that exist and change something, each in one list', () => {
    const known = new Set(MUTATING);
    expect(Object.keys(AUDIT_ACTIONS).filter((key) => !known.has(key))).toEqual([]);
    expect([...AUDIT_EXEMPT].filter((key) => !known.has(key))).toEqual([]);
    expect(Object.keys(AUDIT_ACTIONS).filter((key) => AUDIT_EXEMPT.has(key))).toEqual([]);
  });

  it('takes each resource id from a path parameter the route has, or from its answer', () => {
    for (const [key, entry] of Object.entries(AUDIT_ACTIONS)) {
      if (entry.id.startsWith('params.')) expect(key, key).toContain(`:${entry.id.slice('params.'.length)}`);
      expect(entry.action, key).toMatch(/^[a-z_]+\.[a-z_]+$/);
    }
  });
});

describe('redact', () => {
  it('records that a secret changed, never its value, at any depth', () => {
    expect(redact({
      name: 'Primary', credentials: { api_key: 'sk_live_x' }, config: { api_base: 'https://api.example', client_secret: 's', nested: [{ token: 't' }] },
    }, ['credentials'])).toEqual({
      name: 'Primary', credentials: CHANGED, config: { api_base: 'https://api.example', client_secret: CHANGED, nested: [{ token: CHANGED }] },
    });
  });
});
