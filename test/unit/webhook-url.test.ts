import { describe, expect, it } from 'vitest';
import { isBlockedAddress, webhookUrlProblem } from '../../lib/webhook-url';
import { filterMatches, isValidEventFilter } from '../../lib/webhook-events';

describe('webhook URL policy', () => {
  it.each([
    ['127.0.0.1', true], ['127.8.9.10', true], ['10.1.2.3', true], ['172.16.0.1', true], ['172.31.255.255', true],
    ['192.168.1.1', true], ['169.254.169.254', true], ['100.64.0.1', true], ['0.0.0.0', true], ['224.0.0.1', true],
    ['255.255.255.255', true], ['::1', true], ['::', true], ['fe80::1', true], ['fd00::1', true], ['fc00::1', true],
    ['::ffff:127.0.0.1', true], ['::ffff:10.0.0.1', true], ['ff02::1', true], ['not-an-ip', true],
    ['8.8.8.8', false], ['172.32.0.1', false], ['93.184.216.34', false], ['2606:4700:4700::1111', false],
  ])('%s is blocked: %s', (address, blocked) => expect(isBlockedAddress(address)).toBe(blocked));

  const publicDns = async () => ['93.184.216.34'];
  const privateDns = async () => ['93.184.216.34', '10.0.0.5'];
  const noDns = async () => { throw new Error('ENOTFOUND'); };

  it.each([
    ['https://hooks.example.com/x', { live: true, allowPrivate: false, resolve: publicDns }, null],
    ['http://hooks.example.com/x', { live: true, allowPrivate: false, resolve: publicDns }, /https/],
    ['http://hooks.example.com/x', { live: false, allowPrivate: false, resolve: publicDns }, null],
    // One answer for a name that does not resolve and one that resolves privately: no internal-name oracle.
    ['https://hooks.example.com/x', { live: true, allowPrivate: false, resolve: privateDns }, /^host hooks\.example\.com must resolve to public addresses only$/],
    ['https://nowhere.invalid/x', { live: true, allowPrivate: false, resolve: noDns }, /^host nowhere\.invalid must resolve to public addresses only$/],
    ['https://127.0.0.1/x', { live: true, allowPrivate: false }, /private/],
    ['https://[::1]:8443/x', { live: false, allowPrivate: false }, /private/],
    ['https://169.254.169.254/latest/meta-data', { live: false, allowPrivate: false }, /private/],
    ['https://0x7f000001/', { live: false, allowPrivate: false }, /private/],
    ['http://127.0.0.1:9999/hook', { live: true, allowPrivate: true }, null],
    ['ftp://example.com/x', { live: false, allowPrivate: true }, /http/],
    ['https://user:pass@example.com/x', { live: false, allowPrivate: true }, /credentials/],
    ['not a url', { live: false, allowPrivate: true }, /valid/],
    [`https://example.com/${'a'.repeat(2100)}`, { live: false, allowPrivate: true }, /2048/],
  ] as const)('%s (%j) → %s', async (url, policy, expected) => {
    const problem = await webhookUrlProblem(url, policy);
    if (expected === null) expect(problem).toBeNull();
    else expect(problem).toMatch(expected);
  });
});

describe('webhook event filters', () => {
  it.each([
    ['*', true], ['payment_intent.succeeded', true], ['charge.*', true], ['invoice.paid', true], ['subscription.*', true],
    ['api_key.rotated', true], ['payment_intent.exploded', false], ['webhook_endpoint.verification', false], ['nope.*', false], ['', false],
  ])('%s is a valid filter entry: %s', (entry, valid) => expect(isValidEventFilter(entry)).toBe(valid));

  it.each([
    [['*'], 'charge.failed', true],
    [['charge.*'], 'charge.failed', true],
    [['charge.*'], 'payment_intent.succeeded', false],
    [['payment_intent.succeeded', 'refund.created'], 'refund.created', true],
    [['payment_intent.succeeded'], 'payment_intent.created', false],
    [['payment_intent.*'], 'payment_intent_x.created', false],
  ])('%j receives %s: %s', (filter, type, expected) => expect(filterMatches(filter, type)).toBe(expected));
});
