// How one call reaches Adyen (docs/connectors.md#adyen): the official library builds the request and reads
// the answer, our HTTP client (undici) sends it to the configured base URL within one timeout, and every
// failure is sorted into what the adapter may cascade on (nothing sent) and what it must reconcile
// (unknown). Apart from adapter.ts, which says what each operation sends and how its answer reads.

import { CheckoutAPI, Client, EnvironmentEnum, HttpClientException } from '@adyen/api-library';
import { Agent, request } from 'undici';
import { ADYEN_CHECKOUT_VERSION, ADYEN_TEST_API_BASE, adyenLiveApiBase, type AdyenCredentials } from '../../../lib/providers/adyen/credentials';
import { redactSecrets } from '../exchange';
import { errorCode, isObject, parseJson } from '../../../lib/providers/wire';
import type { ProviderExchange, ProviderOperation, ProviderOutcome } from '../types';
import { errorOutcome } from './answers';
import { withoutCardData } from '../../../lib/providers/adyen/notifications';

export const DEFAULT_TIMEOUT_MS = 10_000;

/** Adyen's Disputes API (v30, the library's) lives on the Customer Area hosts, test and live alike, with no account prefix. */
export const ADYEN_DISPUTES_PATH = '/ca/services/DisputeService/v30';
export const ADYEN_DISPUTES_TEST_BASE = 'https://ca-test.adyen.com';
export const ADYEN_DISPUTES_LIVE_BASE = 'https://ca-live.adyen.com';
export const DEFAULT_CONNECT_TIMEOUT_MS = 2_000;

export interface AdyenTransportOptions {
  /** The provider's `config.api_base`, if any: where requests go instead of Adyen's endpoint. */
  apiBase?: string;
  /** Adyen's live endpoint (under the credentials' `live_url_prefix`) rather than its test one. */
  live: boolean;
  timeoutMs?: number;
  connectTimeoutMs?: number;
}

// Errors raised before the request could reach Adyen: safe to try another provider. Anything else after
// sending (timeouts, resets) leaves the outcome unknown.
const NOT_DELIVERED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

type HttpClient = NonNullable<ConstructorParameters<typeof Client>[1]>;

/** What went over the wire in one call, as our HTTP client saw it. */
interface Wire {
  status?: number;
  body?: unknown;
}

export interface Call<T> {
  operation: ProviderOperation;
  /** Which of Adyen's APIs: Checkout (default) or Disputes, each on its own host (a config's api_base serves both). */
  service?: 'checkout' | 'disputes';
  idempotencyKey: string;
  path: string;
  /** What the exchange record shows of the request: an allow-list, never the card. */
  summary: Record<string, unknown>;
  /** `client`: for another of the library's services than Checkout (its DisputesApi). */
  send: (checkout: CheckoutAPI, merchantAccount: string, client: Client) => Promise<T>;
}

export type Reply<T> =
  | { kind: 'ok'; value: T; exchange: Omit<ProviderExchange, 'outcome'> }
  | { kind: 'error'; outcome: ProviderOutcome; providerCode?: string; exchange: Omit<ProviderExchange, 'outcome'> };

/** `send`: one call to Adyen with the given credentials, its answer or its failure sorted, and what went over the wire. */
export function createAdyenTransport(options: AdyenTransportOptions): { send: <T>(credentials: Record<string, unknown>, call: Call<T>) => Promise<Reply<T>> } {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const { live } = options;
  const agent = new Agent({
    connect: { timeout: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS },
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });

  /** Where the call goes: the api_base, else Adyen's test or live endpoint (the latter under the account's prefix). */
  function baseUrl(credentials: Partial<AdyenCredentials>, service: Call<unknown>['service']): string | undefined {
    if (options.apiBase) return new URL(options.apiBase).origin;
    if (service === 'disputes') return live ? ADYEN_DISPUTES_LIVE_BASE : ADYEN_DISPUTES_TEST_BASE;
    if (!live) return ADYEN_TEST_API_BASE;
    return credentials.live_url_prefix ? adyenLiveApiBase(credentials.live_url_prefix) : undefined;
  }

  /** The library's HTTP hook: its request, sent by undici to `base` and bounded by the timeout; `wire` keeps the answer. */
  function httpClient(base: string, wire: Wire): HttpClient {
    return {
      async request(endpoint, json, config, _apiKeyRequired, requestOptions) {
        const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
        if (config.apiKey) headers['x-api-key'] = config.apiKey;
        if (requestOptions?.idempotencyKey) headers['idempotency-key'] = requestOptions.idempotencyKey;
        const response = await request(rebased(endpoint, base, requestOptions?.params), {
          method: requestOptions?.method === 'GET' ? 'GET' : 'POST',
          headers,
          body: json || undefined,
          dispatcher: agent,
          signal: AbortSignal.timeout(timeoutMs),
        });
        const text = await response.body.text();
        wire.status = response.statusCode;
        wire.body = parseJson(text);
        if (response.statusCode >= 200 && response.statusCode < 300) return text;
        const apiError = isObject(wire.body) ? wire.body : undefined;
        throw new HttpClientException({
          message: `HTTP ${response.statusCode}`,
          statusCode: response.statusCode,
          errorCode: typeof apiError?.errorCode === 'string' ? apiError.errorCode : undefined,
          responseBody: text,
        });
      },
    };
  }

  async function send<T>(credentials: Record<string, unknown>, call: Call<T>): Promise<Reply<T>> {
    const startedAt = new Date();
    const started = performance.now();
    const wire: Wire = {};
    const exchange = (error?: string): Omit<ProviderExchange, 'outcome'> => ({
      operation: call.operation,
      idempotency_key: call.idempotencyKey,
      request: { method: 'POST', path: call.path, body: call.summary },
      ...(wire.status !== undefined ? { response: { status: wire.status, body: redactSecrets(withoutCardData(wire.body)) } } : {}),
      ...(error ? { error } : {}),
      started_at: startedAt.toISOString(),
      duration_ms: Math.round(performance.now() - started),
    });
    const given = credentials as Partial<AdyenCredentials>;
    const base = baseUrl(given, call.service);
    if (!base) {
      const error = 'live_url_prefix missing: a live adyen config needs it (or the provider a config.api_base)';
      return { kind: 'error', outcome: { kind: 'transport_error', error }, exchange: exchange(error) };
    }
    // The library's environment only picks the host our HTTP client replaces; LIVE insists on a prefix.
    const client = new Client({
      apiKey: given.api_key,
      environment: live && given.live_url_prefix ? EnvironmentEnum.LIVE : EnvironmentEnum.TEST,
      liveEndpointUrlPrefix: given.live_url_prefix,
    }, httpClient(base, wire));
    try {
      const value = await call.send(new CheckoutAPI(client), given.merchant_account ?? '', client);
      return { kind: 'ok', value, exchange: exchange() };
    } catch (err) {
      const text = err instanceof Error ? err.message : String(err);
      if (wire.status !== undefined && (wire.status < 200 || wire.status >= 300)) {
        const { outcome, providerCode } = errorOutcome(call.operation, wire.status, wire.body);
        return { kind: 'error', outcome, providerCode, exchange: exchange() };
      }
      // Answered 2xx but unreadable: money may have moved.
      if (wire.status !== undefined) return { kind: 'error', outcome: { kind: 'unknown', error: `unreadable answer: ${text}` }, exchange: exchange(text) };
      const code = errorCode(err);
      const error = `${code ?? (err instanceof Error ? err.name : 'error')}: ${text}`;
      const outcome: ProviderOutcome = code && NOT_DELIVERED.has(code) ? { kind: 'transport_error', error } : { kind: 'unknown', error };
      return { kind: 'error', outcome, exchange: exchange(error) };
    }
  }

  return { send };
}

/** The library's endpoint (Adyen's host, `/v71/…` or the Disputes API's `/ca/services/DisputeService/v30/…`) moved onto our base URL. */
function rebased(endpoint: string, base: string, params: ConstructorParameters<typeof URLSearchParams>[0] | undefined): string {
  const { pathname } = new URL(endpoint);
  const disputes = pathname.startsWith(`${ADYEN_DISPUTES_PATH}/`);
  const at = disputes ? 0 : pathname.indexOf(`/${ADYEN_CHECKOUT_VERSION}/`);
  if (at < 0) throw new Error(`not a Checkout ${ADYEN_CHECKOUT_VERSION} or Disputes endpoint: ${endpoint}`);
  const query = params ? `?${new URLSearchParams(params).toString()}` : '';
  return `${base}${pathname.slice(at)}${query}`;
}
