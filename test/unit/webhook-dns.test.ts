import { createSocket, type Socket } from 'node:dgram';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { guardedLookup, networkResolver } from '../../net/webhook-dns';

// How webhook hosts are resolved where private addresses are refused (production): by c-ares against
// the DNS servers, each try bounded, never by getaddrinfo on libuv's threads. The servers here are a
// local DNS double on UDP: it answers A queries from a table, AAAA with no records, and stays silent
// for `silent.test`, as a merchant's own name server may.

const A_RECORDS: Record<string, string> = { 'public.test': '93.184.216.34', 'internal.test': '10.1.2.3' };

/** The queried name and type of a DNS query (RFC 1035 §4.1: a 12-byte header, then the question). */
function question(query: Buffer): { name: string; type: number; end: number } {
  const labels: string[] = [];
  let at = 12;
  while (query[at] !== 0) {
    labels.push(query.subarray(at + 1, at + 1 + query[at]).toString('ascii'));
    at += 1 + query[at];
  }
  return { name: labels.join('.').toLowerCase(), type: query.readUInt16BE(at + 1), end: at + 5 };
}

/** The answer to `query`: its header and question, flagged a response, with one A record or none. */
function answer(query: Buffer): Buffer | undefined {
  const { name, type, end } = question(query);
  if (name === 'silent.test') return undefined;
  const header = Buffer.from(query.subarray(0, end));
  const address = type === 1 ? A_RECORDS[name] : undefined;
  header.writeUInt16BE(0x8180 | (address || type === 28 ? 0 : 3), 2); // response, recursion available; NXDOMAIN for unknown names
  header.writeUInt16BE(address ? 1 : 0, 6); // answers
  header.writeUInt16BE(0, 8);
  header.writeUInt16BE(0, 10);
  if (!address) return header;
  const record = Buffer.alloc(16);
  record.writeUInt16BE(0xc00c, 0); // the question's name
  record.writeUInt16BE(1, 2); // A
  record.writeUInt16BE(1, 4); // IN
  record.writeUInt32BE(60, 6); // TTL
  record.writeUInt16BE(4, 10);
  address.split('.').forEach((octet, i) => record.writeUInt8(Number(octet), 12 + i));
  return Buffer.concat([header, record]);
}

let server: Socket;
let servers: string[];
beforeAll(async () => {
  server = createSocket('udp4');
  server.on('message', (query, from) => {
    const reply = answer(query);
    if (reply) server.send(reply, from.port, from.address);
  });
  await new Promise<void>((resolve) => server.bind(0, '127.0.0.1', resolve));
  servers = [`127.0.0.1:${(server.address() as AddressInfo).port}`];
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('webhook hosts resolved by c-ares', () => {
  it('resolves a name through the DNS servers, not /etc/hosts', async () => {
    const resolve = networkResolver({ servers, timeoutMs: 300, tries: 1 });
    expect(await resolve('public.test')).toEqual([{ address: '93.184.216.34', family: 4 }]);
    await expect(resolve('localhost')).rejects.toMatchObject({ code: 'ENOTFOUND' });
  });

  it('gives up on a name server that never answers within its bound, as it does on an unknown name', async () => {
    const resolve = networkResolver({ servers, timeoutMs: 300, tries: 2 });
    const started = Date.now();
    await expect(resolve('silent.test')).rejects.toMatchObject({ code: 'ETIMEOUT' });
    expect(Date.now() - started).toBeLessThan(3_000);

    // At connect time each fails as a private address does: nothing tells which names resolve.
    const lookUp = (host: string) => new Promise<{ err: NodeJS.ErrnoException | null; addresses: unknown }>((done) =>
      guardedLookup(false, resolve)(host, { all: true }, (err, addresses) => done({ err, addresses })));
    for (const host of ['silent.test', 'unknown.test', 'internal.test']) {
      expect((await lookUp(host)).err, host).toMatchObject({ code: 'EADDRNOTALLOWED', message: `${host} does not resolve to a public address` });
    }
    expect(await lookUp('public.test')).toEqual({ err: null, addresses: [{ address: '93.184.216.34', family: 4 }] });
  });
});
