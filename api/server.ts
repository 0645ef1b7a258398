import { createServer, STATUS_CODES, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Client } from '@temporalio/client';
import type Koa from 'koa';
import type { Config } from '../lib/config';
import { connectClient } from '../workflows/client';
import type { Db } from '../db/knex';
import { processLease } from '../db/process-lease';
import { logger } from '../lib/logger';
import { createAuthenticator } from './auth/authenticate';
import type { ApiDeps } from './deps';
import { createDeclineLimits } from './middleware/decline-limits';
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
    vault: new Vault(config.vaultKeys),
    declineLimits: createDeclineLimits(db, config.checkoutDeclineLimits),
    accountCache: new LRUCache({ max: 10_000, ttl: 5_000 }),
    lease: processLease(db, (message, err) => logger.warn({ err }, message)),
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
 * Anything else Node refuses is answered as Node would (its own 408, 413 or 400).
 */
export function createHttpServer(app: Koa): Server {
  const server = createServer(app.callback());
  server.keepAliveTimeout = 65_000;
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex & { _httpMessage?: { headersSent?: boolean } | null }) => {
    // Nothing can be answered on a socket already gone, or once the answer in flight on it has begun
    // (Node's own rule: a kept-alive socket has written earlier answers, which is no reason to stay silent).
    if (!socket.writable || socket._httpMessage?.headersSent) {
      socket.destroy(err);
      return;
    }
    socket.end(err.code === 'HPE_HEADER_OVERFLOW' ? enveloped(new ApiError('headers_too_large')) : bare(NODE_REFUSALS[err.code ?? ''] ?? 400));
  });
  return server;
}

/** What Node answers the other requests it refuses (node:_http_server), kept as it is. */
const NODE_REFUSALS: Record<string, number> = { ERR_HTTP_REQUEST_TIMEOUT: 408, HPE_CHUNK_EXTENSIONS_OVERFLOW: 413 };

const bare = (status: number) => `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nConnection: close\r\n\r\n`;

function enveloped(refused: ApiError): string {
  const body = JSON.stringify(errorBody(refused));
  return `HTTP/1.1 ${refused.status} ${STATUS_CODES[refused.status]}\r\nContent-Type: application/json; charset=utf-8\r\n`
    + `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}
