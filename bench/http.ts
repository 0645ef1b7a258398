// The bench's side of the API: JSON with a bearer, and the few fields of the answers it reads.
import { Agent, request } from 'undici';

export interface Answer { id: string; status: string }
export interface AccountAnswer extends Answer { workspace_id: string; api_keys: { type: string; key: string }[] }
export interface ProviderAnswer extends Answer { methods: Answer[] }

/** A non-2xx answer, with its status for the callers that expect one (a 404 from a route this build lacks). */
export class HttpFailure extends Error {
  constructor(readonly status: number, readonly body: unknown, call: string) {
    super(`${call}: ${status} ${JSON.stringify(body)}`);
  }
}

export type Api = ReturnType<typeof apiClient>;

/**
 * `base` is the API's origin; paths are under /v1. Requests go through undici's `request` on one
 * keep-alive pool: the driver shares the machine's two cores with what it measures, and Node's `fetch`
 * spends three to four times its CPU per request (about 0.5 ms more per request here).
 */
export function apiClient(base: string) {
  const pool = new Agent({ connections: 64 });
  async function send<T>(method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, bearer: string, body?: unknown): Promise<{ data: T }> {
    const res = await request(`${base}/v1${path}`, {
      method,
      dispatcher: pool,
      headers: { authorization: `Bearer ${bearer}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const answer: unknown = await res.body.json().catch(() => null);
    if (res.statusCode >= 300) throw new HttpFailure(res.statusCode, answer, `${method} ${path}`);
    return answer as { data: T };
  }
  return {
    get: <T = Answer>(path: string, bearer: string) => send<T>('GET', path, bearer),
    post: <T = Answer>(path: string, body: unknown, bearer: string) => send<T>('POST', path, bearer, body),
    put: <T = Answer>(path: string, body: unknown, bearer: string) => send<T>('PUT', path, bearer, body),
    delete: <T = Answer>(path: string, bearer: string) => send<T>('DELETE', path, bearer),
  };
}

/** A new account's secret key (`POST /accounts` answers it once). */
export function secretKeyOf(account: AccountAnswer): string {
  const secret = account.api_keys.find((k) => k.type === 'SECRET');
  if (!secret) throw new Error(`the new account ${account.id} has no secret key`);
  return secret.key;
}

export const VISA = { type: 'CARD', card: { number: '4242424242424242', exp_month: 12, exp_year: new Date().getFullYear() + 3, cvc: '123' } };

/** The simulator's `card_declined` card: a hard decline (lib/providers/sandbox/decline-codes.ts), so no cascade. */
export const DECLINED_CARD = { type: 'CARD', card: { ...VISA.card, number: '4000000000000002' } };

/** Subscribes a webhook endpoint at `url` to `events` and waits (10 s at most) for its handshake to enable it. */
export async function enabledEndpoint(http: Api, key: string, url: string, events: readonly string[]): Promise<Answer> {
  const endpoint = (await http.post<Answer>('/webhook-endpoints', { url, events }, key)).data;
  for (let i = 0; i < 100; i++) {
    if ((await http.get<Answer>(`/webhook-endpoints/${endpoint.id}`, key)).data.status === 'enabled') return endpoint;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`webhook endpoint ${endpoint.id} not enabled after 10 s`);
}
