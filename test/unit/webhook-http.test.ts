import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LookupAddress } from 'node:dns';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { guardedLookup, type HostResolver } from '../../net/webhook-dns';
import { postWebhook, RESPONSE_BODY_LIMIT, webhookAgent } from '../../activities/webhooks/http';

// The worker's side of a delivery: what its connect-time DNS guard answers, and what of a receiver's
// answer is kept.

type Answer = Error | LookupAddress[];
/** A resolver that answers `answer` for every name. */
const resolver = (answer: Answer): HostResolver => async () => {
  if (answer instanceof Error) throw answer;
  return answer;
};

function lookUp(answer: Answer, host: string, allowPrivate = false): Promise<{ err: NodeJS.ErrnoException | null; addresses: unknown }> {
  return new Promise((resolve) => guardedLookup(allowPrivate, resolver(answer))(host, { all: true }, (err, addresses) => resolve({ err, addresses })));
}

describe('the connect-time DNS guard', () => {
  it('fails a name that does not resolve exactly as one that resolves only to private addresses (no internal-name oracle)', async () => {
    const missing = await lookUp(Object.assign(new Error('getaddrinfo ENOTFOUND internal.corp'), { code: 'ENOTFOUND' }), 'internal.corp');
    const internal = await lookUp([{ address: '10.1.2.3', family: 4 }], 'internal.corp');
    for (const { err } of [missing, internal]) expect(err).toMatchObject({ code: 'EADDRNOTALLOWED', message: 'internal.corp does not resolve to a public address' });
    expect(await lookUp([{ address: '10.1.2.3', family: 4 }, { address: '93.184.216.34', family: 4 }], 'mixed.example'))
      .toEqual({ err: null, addresses: [{ address: '93.184.216.34', family: 4 }] });
    // With private addresses allowed (development), the resolver's own error stands.
    expect((await lookUp(Object.assign(new Error('getaddrinfo ENOTFOUND x'), { code: 'ENOTFOUND' }), 'x', true)).err).toMatchObject({ code: 'ENOTFOUND' });
  });
});

describe('a receiver\'s answer', () => {
  let server: Server;
  let url: string;
  beforeAll(async () => {
    server = createServer((req, res) => {
      req.resume();
      res.end(Buffer.alloc(5 * 1024 * 1024, req.url === '/invalid' ? 0xff : 0x61));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('is kept to 16 KiB in bytes, also when every byte of it is invalid UTF-8 (each decoded to a three-byte U+FFFD)', async () => {
    const agent = webhookAgent(true);
    for (const path of ['/valid', '/invalid']) {
      const result = await postWebhook(agent, true, `${url}${path}`, '{}', { 'content-type': 'application/json' });
      expect(result).toMatchObject({ statusCode: 200, truncated: true, error: null });
      expect(Buffer.byteLength(result.responseBody!), path).toBeLessThanOrEqual(RESPONSE_BODY_LIMIT);
      expect(Buffer.byteLength(result.responseBody!), path).toBeGreaterThan(RESPONSE_BODY_LIMIT - 3);
    }
    await agent.close();
  });
});
