import { createServer, STATUS_CODES, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Client } from '@temporalio/client';
import type Koa from 'koa';
import type { Config } from '../lib/config';
import { connectClient } from '../workflows/client';
import type { Db } from '../db/knex';
import { createAuthenticator } from './auth/authenticate';
import type { ApiDeps } from './deps';
import { ApiError, errorBody } from './errors';
import { Vault } from '../lib/vault';
import { LRUCache } from 'lru-cache';

/** API dependencies from config: the Temporal client connects on first use and reconnects after a failure. */
export function createApiDeps(db: Db, config: Config, temporalAddress: string): ApiDeps {
  let client: Promise<Client> | undefined;
  return {
    db,
    config,
    auth: createAuthenticator(db, config),
    vault: new Vault(config.vaultKey),
    accountCache: new LRUCache({ max: 10_000, ttl: 5_000 }),
    temporal() {
      client ??= connectClient(config, temporalAddress).catch((err) => {
        client = undefined;
        throw err;
      });
      return client;
    },
  };
}

/**
 * The API's HTTP server. Requests Node refuses before Koa sees them still get the error envelope: headers
 * over Node's 16 KiB (a huge Authorization, say) are `431 headers_too_large`, not Node's bare status line.
 * Other malformed requests keep Node's own 400.
 */
export function createHttpServer(app: Koa): Server {
  const server = createServer(app.callback());
  server.keepAliveTimeout = 65_000;
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (!socket.writable || err.code === 'ECONNRESET') {
      socket.destroy();
      return;
    }
    if (err.code !== 'HPE_HEADER_OVERFLOW') {
      socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
      return;
    }
    const refused = new ApiError('headers_too_large');
    const body = JSON.stringify(errorBody(refused));
    socket.end(`HTTP/1.1 ${refused.status} ${STATUS_CODES[refused.status]}\r\nContent-Type: application/json; charset=utf-8\r\n`
      + `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  });
  return server;
}
