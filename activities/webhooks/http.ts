import { Agent, request } from 'undici';
import { parseRetryAfter } from '../../lib/webhook-retry';
import { refusesLiteralHost } from '../../lib/webhook-url';
import { guardedLookup } from '../../net/webhook-dns';

/** Delivery limits (docs/webhooks.md#delivery-and-retries). */
export const WEBHOOK_TIMEOUT_MS = 15_000;
/**
 * The whole exchange with an endpoint already failing: it has shown it may hang, so it holds a
 * delivery slot for a third of the time (docs/webhooks.md#fairness-across-accounts).
 */
export const FAILING_ENDPOINT_TIMEOUT_MS = 5_000;
export const RESPONSE_BODY_LIMIT = 16 * 1024;
const USER_AGENT = 'Switchboard-Webhooks/1.0 (+https://www.standardwebhooks.com)';

export interface HttpResult {
  /** 0 when no HTTP answer came back. */
  statusCode: number;
  durationMs: number;
  responseBody: string | null;
  truncated: boolean;
  error: string | null;
  retryAfterMs: number | null;
}

/** One pool for every webhook URL; the guarded lookup makes the address checked the address used. */
export function webhookAgent(allowPrivate: boolean): Agent {
  return new Agent({
    connect: { lookup: guardedLookup(allowPrivate), timeout: 10_000 },
    headersTimeout: WEBHOOK_TIMEOUT_MS,
    bodyTimeout: WEBHOOK_TIMEOUT_MS,
    keepAliveTimeout: 4_000,
  });
}

/** Reads at most `limit` bytes of a response body, then drops the rest of the stream. */
async function readCapped(body: AsyncIterable<Buffer> & { destroy(): void }, limit: number): Promise<{ text: string; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.length;
    if (size > limit) {
      truncated = true;
      body.destroy();
      break;
    }
  }
  // Postgres text cannot hold NUL; a cut multi-byte character becomes U+FFFD. So does every invalid
  // byte, three bytes each: the text is cut again so that it stays within the limit in bytes too.
  let text = Buffer.concat(chunks).subarray(0, limit).toString('utf8').replace(/\0/g, '');
  if (Buffer.byteLength(text) > limit) {
    truncated = true;
    // The second cut can end in a U+FFFD of its own: drop whole characters until it fits.
    const characters = [...Buffer.from(text).subarray(0, limit).toString('utf8')];
    while (Buffer.byteLength(characters.join('')) > limit) characters.pop();
    text = characters.join('');
  }
  return { text, truncated };
}

function describeError(err: unknown, timeoutMs: number): string {
  if (!(err instanceof Error)) return String(err);
  if (err.name === 'TimeoutError' || err.name === 'AbortError') return `timeout: no complete answer within ${timeoutMs / 1000} s`;
  const code = (err as { code?: string }).code;
  const cause = (err as { cause?: unknown }).cause;
  const message = cause instanceof Error ? `${err.message}: ${cause.message}` : err.message;
  return (code ? `${code}: ${message}` : message).slice(0, 1000);
}

/**
 * One webhook POST: `timeoutMs` (15 s by default) for the whole exchange, redirects not followed
 * (undici's `request` never follows them), connections only to allowed addresses. Never throws: every
 * failure is a result.
 */
export async function postWebhook(
  agent: Agent, allowPrivate: boolean, url: string, body: string, headers: Record<string, string>, timeoutMs = WEBHOOK_TIMEOUT_MS,
): Promise<HttpResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const failed = (error: string): HttpResult => ({ statusCode: 0, durationMs: elapsed(), responseBody: null, truncated: false, error, retryAfterMs: null });
  // Literal addresses skip DNS, so the guarded lookup never sees them: check them here.
  if (refusesLiteralHost(new URL(url), allowPrivate)) return failed('refused: the URL points at a private or reserved address');
  const signal = AbortSignal.timeout(timeoutMs);
  let res: Awaited<ReturnType<typeof request>>;
  try {
    res = await request(url, { method: 'POST', body, headers: { ...headers, 'user-agent': USER_AGENT }, dispatcher: agent, signal });
  } catch (err) {
    return failed(describeError(err, timeoutMs));
  }
  const retryAfterMs = parseRetryAfter(res.headers['retry-after'], Date.now());
  try {
    const { text, truncated } = await readCapped(res.body, RESPONSE_BODY_LIMIT);
    return { statusCode: res.statusCode, durationMs: elapsed(), responseBody: text, truncated, error: null, retryAfterMs };
  } catch (err) {
    // The status line came back but the body did not finish in time: the status still counts.
    return { statusCode: res.statusCode, durationMs: elapsed(), responseBody: null, truncated: false, error: `reading the response: ${describeError(err, timeoutMs)}`, retryAfterMs };
  }
}
