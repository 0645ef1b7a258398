import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { Agent, request } from 'undici';
import { sleep } from './processes';

/**
 * A merchant's client as it should be written: every POST carries an Idempotency-Key and is sent again
 * with the same key, 1–2 s later, while the answer is no answer, a 5xx, a 429 or a 409
 * `idempotency_key_in_use` (the first request still runs), up to `tries` times.
 */
export interface Answer {
  status: number;
  body: { data?: Record<string, unknown>; message?: string; error?: { details?: { reason?: string; status?: string } } } | null;
}

/** One logical request: its final answer (status 0 when none ever came) and how many tries it took. */
export interface RequestRecord {
  method: string;
  path: string;
  key?: string;
  status: number;
  reason?: string;
  /** The final answer's message and, for invalid_state, the status it named: what a breach report needs. */
  message?: string;
  tries: number;
  /** Tries answered 409 idempotency_key_in_use ("retry later"). */
  inUse: number;
}

export const reasonOf = (answer: Answer) => answer.body?.error?.details?.reason;

const retryable = (answer: Answer) =>
  answer.status === 0 || answer.status >= 500 || answer.status === 429 || (answer.status === 409 && reasonOf(answer) === 'idempotency_key_in_use');

export class RetryingClient {
  readonly records: RequestRecord[] = [];
  private readonly pool = new Agent({ connections: 32, keepAliveTimeout: 2_000 });

  constructor(private readonly base: string, private readonly opts: { tries: number; timeoutMs: number; stopAt: number }) {}

  async send(method: 'GET' | 'POST', path: string, bearer: string, body?: unknown, key?: string): Promise<Answer> {
    const record: RequestRecord = { method, path, key, status: 0, tries: 0, inUse: 0 };
    this.records.push(record);
    let answer: Answer = { status: 0, body: null };
    while (record.tries < this.opts.tries && Date.now() < this.opts.stopAt) {
      if (record.tries > 0) await sleep(1_000 + Math.random() * 1_000);
      record.tries++;
      answer = await this.once(method, path, bearer, body, key);
      if (answer.status === 409 && reasonOf(answer) === 'idempotency_key_in_use') record.inUse++;
      if (!retryable(answer)) break;
    }
    record.status = answer.status;
    record.reason = reasonOf(answer);
    const named = answer.body?.error?.details?.status;
    if (answer.status >= 300) record.message = `${answer.body?.message ?? ''}${named ? ` (status ${named})` : ''}`;
    return answer;
  }

  async close(): Promise<void> {
    await this.pool.close();
  }

  private async once(method: string, path: string, bearer: string, body: unknown, key: string | undefined): Promise<Answer> {
    try {
      const res = await request(`${this.base}/v1${path}`, {
        method,
        dispatcher: this.pool,
        headers: {
          authorization: `Bearer ${bearer}`,
          ...(key ? { 'idempotency-key': key } : {}),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        headersTimeout: this.opts.timeoutMs,
        bodyTimeout: this.opts.timeoutMs,
      });
      const parsed = await res.body.json().catch(() => null) as Answer['body'];
      return { status: res.statusCode, body: parsed };
    } catch {
      return { status: 0, body: null };
    }
  }
}

/** One request the receiver got: the `webhook-id` header and the event's own id and type. */
export interface Received {
  webhookId: string;
  eventId: string;
  type: string;
}

/**
 * The merchant's webhook endpoint: a loopback HTTP server that passes the handshake (echoes the
 * challenge) and answers 200 to every event, remembering each request.
 */
export class WebhookReceiver {
  readonly received: Received[] = [];
  private constructor(private readonly server: Server) {}

  static async start(): Promise<WebhookReceiver> {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        let event: { id?: string; type?: string; data?: { challenge?: string } } = {};
        try {
          event = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          // not JSON: recorded with empty ids, which the reconciliation counts as a mismatch
        }
        if (event.type === 'webhook_endpoint.verification') {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ challenge: event.data?.challenge }));
          return;
        }
        receiver.received.push({ webhookId: String(req.headers['webhook-id'] ?? ''), eventId: event.id ?? '', type: event.type ?? '' });
        res.writeHead(200);
        res.end('ok');
      });
    });
    const receiver = new WebhookReceiver(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hooks`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
