import { describe, expect, it } from 'vitest';
import { hostEntryProblem, parseReturnUrlHosts, returnUrlHostAllowed } from '../../lib/return-url-hosts';

// The account's return_url_hosts (docs/security.md §17): which host entries are stored, which URLs they allow.

describe('return_url_hosts', () => {
  it.each([
    ['shop.example.com', true], ['*.example.com', true], ['a-b.c.example.co.uk', true],
    ['https://shop.example.com', false], ['shop.example.com:443', false], ['shop.example.com/done', false],
    ['Shop.Example.com', false], ['localhost', false], ['*.com.', false], ['*', false], ['sh*p.example.com', false],
  ])('stores %s: %s', (entry, stored) => {
    expect(hostEntryProblem(entry) === undefined).toBe(stored);
  });

  it.each([
    [[], 'https://anything.test/x', true],
    [['shop.example.com'], 'https://shop.example.com/done', true],
    [['shop.example.com'], 'https://SHOP.example.com/done', true],
    [['shop.example.com'], 'https://pay.shop.example.com/done', false],
    [['shop.example.com'], 'https://shop.example.com.evil.test/done', false],
    [['*.example.com'], 'https://pay.example.com/done', true],
    [['*.example.com'], 'https://a.b.example.com/done', true],
    [['*.example.com'], 'https://example.com/done', false],
    [['*.example.com'], 'https://evilexample.com/done', false],
  ] as const)('with %j allows %s: %s', (hosts, url, allowed) => {
    expect(returnUrlHostAllowed(hosts, new URL(url))).toBe(allowed);
  });

  it('reads an absent setting as no list', () => {
    expect(parseReturnUrlHosts(undefined)).toEqual([]);
    expect(parseReturnUrlHosts('["shop.example.com"]')).toEqual(['shop.example.com']);
  });
});
