import { describe, expect, it } from 'vitest';
import { looksLikeId, newId, newUlid } from '../../lib/ids';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

describe('ids', () => {
  it('mints distinct ids that sort in the order they were made, within one millisecond too', () => {
    const ids = Array.from({ length: 20_000 }, () => newId('evt'));
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    for (const id of ids.slice(0, 100)) expect(looksLikeId(id, 'evt')).toBe(true);
  });

  it('draws fresh randomness for each ULID, every character of the alphabet about equally often', () => {
    const randomParts = Array.from({ length: 20_000 }, () => newUlid().slice(10));
    expect(new Set(randomParts).size).toBe(randomParts.length);
    const counts = new Map<string, number>();
    for (const part of randomParts) for (const c of part) counts.set(c, (counts.get(c) ?? 0) + 1);
    expect([...counts.keys()].sort().join('')).toBe(CROCKFORD);
    // 320,000 characters over 32: 10,000 each expected; a broken source (a constant, a bias) is far off.
    for (const n of counts.values()) expect(Math.abs(n - 10_000)).toBeLessThan(600);
  });
});
