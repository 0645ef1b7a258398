import { describe, expect, it } from 'vitest';
import { isBlockedAddress, webhookUrlProblem } from '../../lib/webhook-url';

// Every entry of the IANA IPv4 and IPv6 Special-Purpose Address Registries, plus multicast and the
// deprecated forms, by a sample address inside it: none may be a webhook target without WEBHOOK_ALLOW_PRIVATE.
const IANA_IPV4 = [
  ['0.0.0.0/8', '0.1.2.3'], ['0.0.0.0/32', '0.0.0.0'], ['10.0.0.0/8', '10.200.0.1'], ['100.64.0.0/10', '100.127.255.254'],
  ['127.0.0.0/8', '127.0.0.2'], ['169.254.0.0/16', '169.254.169.254'], ['172.16.0.0/12', '172.20.0.1'],
  ['192.0.0.0/24', '192.0.0.200'], ['192.0.0.0/29', '192.0.0.1'], ['192.0.0.8/32', '192.0.0.8'], ['192.0.0.9/32', '192.0.0.9'],
  ['192.0.0.10/32', '192.0.0.10'], ['192.0.0.170/32', '192.0.0.170'], ['192.0.0.171/32', '192.0.0.171'],
  ['192.0.2.0/24', '192.0.2.10'], ['192.31.196.0/24', '192.31.196.1'], ['192.52.193.0/24', '192.52.193.1'],
  ['192.88.99.0/24', '192.88.99.1'], ['192.168.0.0/16', '192.168.10.1'], ['192.175.48.0/24', '192.175.48.1'],
  ['198.18.0.0/15', '198.19.255.1'], ['198.51.100.0/24', '198.51.100.7'], ['203.0.113.0/24', '203.0.113.9'],
  ['240.0.0.0/4', '250.1.2.3'], ['255.255.255.255/32', '255.255.255.255'], ['224.0.0.0/4 (multicast)', '239.255.255.250'],
] as const;
const IANA_IPV6 = [
  ['::1/128', '::1'], ['::/128', '::'], ['::ffff:0:0/96', '::ffff:127.0.0.1'], ['64:ff9b::/96', '64:ff9b::7f00:1'],
  ['64:ff9b:1::/48', '64:ff9b:1::808:808'], ['100::/64', '100::1'], ['100:0:0:1::/64', '100:0:0:1::1'],
  ['2001::/23', '2001:1ff::1'], ['2001::/32', '2001:0:4136:e378:8000:63bf:3fff:fdd2'], ['2001:1::1/128', '2001:1::1'],
  ['2001:1::2/128', '2001:1::2'], ['2001:1::3/128', '2001:1::3'], ['2001:2::/48', '2001:2::1'], ['2001:3::/32', '2001:3::1'],
  ['2001:4:112::/48', '2001:4:112::1'], ['2001:10::/28', '2001:10::1'], ['2001:20::/28', '2001:20::1'],
  ['2001:30::/28', '2001:30::1'], ['2001:db8::/32', '2001:db8::1'], ['2002::/16', '2002:808:808::1'],
  ['2620:4f:8000::/48', '2620:4f:8000::1'], ['3fff::/20', '3fff::1'], ['5f00::/16', '5f00::1'], ['fc00::/7', 'fd12:3456::1'],
  ['fe80::/10', 'fe80::1'], ['ff00::/8 (multicast)', 'ff02::1'], ['fec0::/10 (deprecated site-local)', 'fec0::1'],
  ['::/96 (IPv4-compatible, deprecated)', '::7f00:1'], ['::ffff:0:0:0/96 (IPv4-translated)', '::ffff:0:a00:1'],
] as const;

describe('webhook addresses: only global unicast', () => {
  it.each([...IANA_IPV4, ...IANA_IPV6])('%s (%s) is refused', (_range, address) => {
    expect(isBlockedAddress(address)).toBe(true);
  });

  it.each([
    // Forms that embed an IPv4 address where the packet is delivered are judged by that address…
    ['::ffff:8.8.8.8', false], ['::ffff:10.0.0.1', true], ['64:ff9b::808:808', false], ['64:ff9b::a9fe:a9fe', true],
    ['::ffff:0:808:808', false], ['::808:808', false], ['::127.0.0.1', true], ['::0.0.0.1', true],
    // …tunnelling forms (6to4, Teredo) are refused whatever they embed.
    ['2002:7f00:1::1', true], ['2002:808:808::1', true],
    ['8.8.8.8', false], ['93.184.216.34', false], ['1.1.1.1', false], ['2606:4700:4700::1111', false], ['2a00:1450:4001::200e', false],
    ['not-an-ip', true], ['1.2.3', true], ['', true],
  ] as const)('%s is refused: %s', (address, blocked) => expect(isBlockedAddress(address)).toBe(blocked));

  it.each([
    'http://[64:ff9b::a9fe:a9fe]/', 'http://[64:ff9b::169.254.169.254]/', 'http://[::127.0.0.1]/', 'http://[::ffff:10.0.0.1]/',
    'http://100.64.0.1/', 'http://192.0.0.1/', 'http://198.18.0.1/', 'http://240.0.0.1/', 'http://0.0.0.0/', 'http://[fc00::1]/',
    'http://[fe80::1]/', 'http://[2001:db8::1]/', 'http://[2002:7f00:1::1]/', 'http://[::]/', 'http://[::ffff:7f00:1]:8080/x',
    'http://0x7f.1/', 'http://2130706433/',
  ])('%s is refused at creation', async (url) => {
    expect(await webhookUrlProblem(url, { live: false, allowPrivate: false })).toMatch(/private/);
  });

  it('allows a public address, and a host name resolving only to public ones (NAT64 of a public one included)', async () => {
    expect(await webhookUrlProblem('http://93.184.216.34/hook', { live: false, allowPrivate: false })).toBeNull();
    expect(await webhookUrlProblem('https://[2606:4700:4700::1111]/hook', { live: true, allowPrivate: false })).toBeNull();
    const resolve = async () => ['93.184.216.34', '64:ff9b::5db8:d822'];
    expect(await webhookUrlProblem('https://hooks.example.com/x', { live: true, allowPrivate: false, resolve })).toBeNull();
    const nat64OfMetadata = async () => ['64:ff9b::a9fe:a9fe'];
    expect(await webhookUrlProblem('https://hooks.example.com/x', { live: true, allowPrivate: false, resolve: nat64OfMetadata })).toMatch(/must resolve to public addresses only/);
  });
});
