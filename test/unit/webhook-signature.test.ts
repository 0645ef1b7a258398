import { describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import {
  generateWebhookSecret, secretKey, signature, signatureHeader, signedHeaders, verifySignature,
} from '../../lib/webhook-signature';

// A fixed secret (32 bytes of 0x01..0x20) so that the expected values below are reproducible.
const SECRET = `whsec_${Buffer.from(Array.from({ length: 32 }, (_, i) => i + 1)).toString('base64')}`;
const OTHER = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;

describe('webhook signatures (Standard Webhooks)', () => {
  it('generates whsec_ + base64 of 32 random bytes, different every time', () => {
    const a = generateWebhookSecret();
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(secretKey(a)).toHaveLength(32);
    expect(generateWebhookSecret()).not.toBe(a);
  });

  it.each([
    { id: 'evt_01', timestamp: 1_700_000_000, body: '{"a":1}' },
    { id: 'evt_01J0000000000000000000000', timestamp: 1_767_225_600, body: '{"type":"payment_intent.succeeded","data":{"object":{"amount":1000}}}' },
    { id: 'msg_unicode', timestamp: 1, body: '{"name":"Zoë — ünïcode ✓"}' },
    { id: 'evt_empty', timestamp: 1_700_000_123, body: '' },
  ])('signs "$id.$timestamp.<body>" exactly as the standardwebhooks package does ($id)', ({ id, timestamp, body }) => {
    const ours = signature(SECRET, id, timestamp, body);
    expect(ours).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(ours).toBe(new Webhook(SECRET).sign(id, new Date(timestamp * 1000), body));
    // Buffer and string bodies sign the same bytes.
    expect(signature(SECRET, id, timestamp, Buffer.from(body))).toBe(ours);
  });

  it.each([
    ['the body', { body: '{"a":2}' }],
    ['the id', { id: 'evt_02' }],
    ['the timestamp', { timestamp: 1_700_000_001 }],
    ['the secret', { secret: OTHER }],
  ])('changes when %s changes', (_what, change) => {
    const base = { secret: SECRET, id: 'evt_01', timestamp: 1_700_000_000, body: '{"a":1}' };
    const changed = { ...base, ...change };
    expect(signature(changed.secret, changed.id, changed.timestamp, changed.body)).not.toBe(signature(base.secret, base.id, base.timestamp, base.body));
  });

  it('puts one signature per secret in the header, space-separated, each verifiable with its own secret', () => {
    const now = Math.floor(Date.now() / 1000);
    const header = signatureHeader([SECRET, OTHER], 'evt_1', now, '{}');
    const parts = header.split(' ');
    expect(parts).toEqual([signature(SECRET, 'evt_1', now, '{}'), signature(OTHER, 'evt_1', now, '{}')]);
    const headers = { 'webhook-id': 'evt_1', 'webhook-timestamp': String(now), 'webhook-signature': header };
    expect(new Webhook(SECRET).verify('{}', headers)).toEqual({});
    expect(new Webhook(OTHER).verify('{}', headers)).toEqual({});
    expect(() => new Webhook(generateWebhookSecret()).verify('{}', headers)).toThrow();
  });

  it('emits the Standard Webhooks headers and their X-Switchboard twins with the same values', () => {
    const h = signedHeaders({ id: 'evt_9', timestamp: 1_700_000_000, body: '{"x":1}', secrets: [SECRET], eventType: 'charge.succeeded' });
    expect(h).toEqual({
      'content-type': 'application/json',
      'webhook-id': 'evt_9',
      'webhook-timestamp': '1700000000',
      'webhook-signature': signature(SECRET, 'evt_9', 1_700_000_000, '{"x":1}'),
      'x-switchboard-id': 'evt_9',
      'x-switchboard-timestamp': '1700000000',
      'x-switchboard-signature': signature(SECRET, 'evt_9', 1_700_000_000, '{"x":1}'),
      'x-switchboard-event-type': 'charge.succeeded',
    });
  });

  it.each([
    ['a valid signature', {}, true],
    ['a tampered body', { body: '{"a":2}' }, false],
    ['a timestamp outside the tolerance', { now: 1_700_000_000 + 301 }, false],
    ['a non-numeric timestamp', { timestamp: '17e8' }, false],
    ['an unknown signature version', { sig: (s: string) => s.replace('v1,', 'v2,') }, false],
  ] as const)('verifySignature: %s → %s', (_what, change: any, expected) => {
    const sig = signature(SECRET, 'evt_1', 1_700_000_000, '{"a":1}');
    const headers = { id: 'evt_1', timestamp: change.timestamp ?? '1700000000', signature: change.sig ? change.sig(sig) : sig };
    expect(verifySignature(SECRET, headers, change.body ?? '{"a":1}', change.now ?? 1_700_000_010)).toBe(expected);
  });

  it('refuses secrets without the whsec_ prefix or with too short a key', () => {
    expect(() => signature('abc', 'evt', 1, '')).toThrow(/whsec_/);
    expect(() => signature(`whsec_${Buffer.alloc(8).toString('base64')}`, 'evt', 1, '')).toThrow(/24 bytes/);
    expect(() => signatureHeader([], 'evt', 1, '')).toThrow();
  });
});
