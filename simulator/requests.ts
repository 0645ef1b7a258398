// Reading the simulated processor's requests: bodies, forms and the authorize's fields, each refused
// with 400 invalid_request before anything is recorded (a request that fails validation moves no money
// and takes no idempotency key). Apart from server.ts, which routes and answers.

import type { Context } from 'koa';
import parseBody from 'co-body';
import type { AuthenticationData } from './challenges';
import { SimulatorError } from './errors';
import type { AuthorizeRequest } from './ledger';

export function invalid(message: string): SimulatorError {
  return new SimulatorError(400, 'invalid_request', message);
}

export async function readForm(ctx: Context): Promise<Record<string, unknown>> {
  try {
    const form: unknown = await parseBody.form(ctx.req, { limit: '8kb' });
    return typeof form === 'object' && form !== null ? (form as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

export async function readJson(ctx: Context): Promise<Record<string, unknown>> {
  let body: unknown;
  try {
    body = await parseBody.json(ctx.req, { limit: '64kb', strict: true });
  } catch {
    throw invalid('the body must be JSON');
  }
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body)) throw invalid('the body must be a JSON object');
  return body as Record<string, unknown>;
}

export function requiredAmount(value: unknown, name: string): number {
  if (!Number.isInteger(value) || (value as number) < 1) throw invalid(`${name} must be a positive integer`);
  return value as number;
}

export function optionalAmount(value: unknown, name: string): number | undefined {
  return value === undefined ? undefined : requiredAmount(value, name);
}

const isInteger = (value: unknown): value is number => Number.isInteger(value);

export function authorizeRequest(body: Record<string, unknown>): AuthorizeRequest {
  const amount = requiredAmount(body.amount, 'amount');
  if (typeof body.currency !== 'string' || !/^[A-Z]{3}$/.test(body.currency)) throw invalid('currency must be an upper-case ISO-4217 code');
  const installments = body.installments === undefined ? 1 : requiredAmount(body.installments, 'installments');
  const card = body.card;
  if (typeof card !== 'object' || card === null) throw invalid('card is required');
  const { number, exp_month, exp_year, cvc } = card as Record<string, unknown>;
  if (typeof number !== 'string') throw invalid('card.number must be a string');
  if (!isInteger(exp_month) || exp_month < 1 || exp_month > 12) throw invalid('card.exp_month must be 1-12');
  if (!isInteger(exp_year)) throw invalid('card.exp_year must be an integer');
  if (cvc !== undefined && typeof cvc !== 'string') throw invalid('card.cvc must be a string');
  if (body.capture !== undefined && typeof body.capture !== 'boolean') throw invalid('capture must be a boolean');
  const returnUrl = optionalUrl(body.return_url, 'return_url');
  const notificationUrl = optionalUrl(body.notification_url, 'notification_url');
  const threeDSecure = threeDSecureRequest(body.three_d_secure);
  const storedCredential = storedCredentialRequest(body.stored_credential);
  return {
    amount, currency: body.currency, installments, card: { number, exp_month, exp_year, cvc }, capture: body.capture === true,
    ...(returnUrl ? { return_url: returnUrl } : {}),
    ...(notificationUrl ? { notification_url: notificationUrl } : {}),
    ...(threeDSecure ? { three_d_secure: threeDSecure } : {}),
    ...(storedCredential ? { stored_credential: storedCredential } : {}),
  };
}

/**
 * `stored_credential`: the card is used under a subscription agreement, `customer`-initiated (present) or
 * `merchant`-initiated (off-session), the latter referencing an earlier approval's network_transaction_id.
 */
function storedCredentialRequest(value: unknown): AuthorizeRequest['stored_credential'] {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid('stored_credential must be an object');
  const { model, initiator, network_transaction_id: id, ...rest } = value as Record<string, unknown>;
  if (Object.keys(rest).length) throw invalid(`unknown stored_credential field ${Object.keys(rest).join(', ')}`);
  if (model !== 'subscription') throw invalid('stored_credential.model must be subscription');
  if (initiator !== 'customer' && initiator !== 'merchant') throw invalid('stored_credential.initiator must be customer or merchant');
  if (id !== undefined && !(typeof id === 'string' && /^[A-Za-z0-9]{1,64}$/.test(id))) throw invalid('stored_credential.network_transaction_id must be 1-64 letters or digits');
  if (id !== undefined && initiator !== 'merchant') throw invalid('stored_credential.network_transaction_id is sent with a merchant-initiated transaction only');
  return { model, initiator, ...(id !== undefined ? { network_transaction_id: id } : {}) };
}

const MAX_URL_LENGTH = 2_048;

function optionalUrl(value: unknown, name: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length > MAX_URL_LENGTH) throw invalid(`${name} must be an absolute http(s) URL`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalid(`${name} must be an absolute http(s) URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalid(`${name} must be an absolute http(s) URL`);
  return value;
}

const EXTERNAL_FIELDS = ['version', 'eci', 'cavv', 'ds_transaction_id'] as const;

function threeDSecureRequest(value: unknown): AuthorizeRequest['three_d_secure'] {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid('three_d_secure must be an object');
  const { requested, external } = value as Record<string, unknown>;
  if (requested !== undefined && typeof requested !== 'boolean') throw invalid('three_d_secure.requested must be a boolean');
  if (external === undefined) return { ...(requested !== undefined ? { requested } : {}) };
  if (typeof external !== 'object' || external === null || Array.isArray(external)) throw invalid('three_d_secure.external must be an object');
  const data = external as Record<string, unknown>;
  for (const field of EXTERNAL_FIELDS) {
    if (typeof data[field] !== 'string' || data[field] === '') throw invalid(`three_d_secure.external.${field} must be a non-empty string`);
  }
  const authentication = Object.fromEntries(EXTERNAL_FIELDS.map((field) => [field, data[field]])) as unknown as AuthenticationData;
  return { ...(requested !== undefined ? { requested } : {}), external: authentication };
}
