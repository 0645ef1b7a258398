import { Type } from '@sinclair/typebox';
import type { Environment } from '../../db/environments';
import { ApiError } from '../errors';
import { Id, Obj } from '../../resources/schemas';

// The request fields a payment's create and confirm share: its routing hints, installments and return_url.

export const Routing = Obj({
  provider_config_ids: Type.Optional(Type.Array(Id('ppc'), { maxItems: 10, uniqueItems: true })),
  exclude_provider_config_ids: Type.Optional(Type.Array(Id('ppc'), { maxItems: 50, uniqueItems: true })),
  max_attempts: Type.Optional(Type.Integer({ minimum: 1, maximum: 5 })),
});

export const Installments = Type.Integer({ minimum: 1, maximum: 48 });
export const ReturnUrl = Type.String({
  format: 'uri', maxLength: 2048,
  description: 'where the customer\'s browser goes after authenticating (3-D Secure), with payment_intent=<id> appended: absolute https:// (http:// also in sandbox)',
});

/**
 * A URL the customer's browser is sent to (return_url, success_url, cancel_url): absolute https (http too
 * in sandbox, for local shops), without credentials. 400 at `body/<field>` otherwise.
 */
export function checkBrowserUrl(value: string, env: Environment, field: string): URL {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  const allowed = url && (url.protocol === 'https:' || (url.protocol === 'http:' && env === 'sandbox')) && !url.username && !url.password;
  if (!url || !allowed) {
    throw ApiError.validation([{ path: `body/${field}`, message: env === 'sandbox' ? 'must be an absolute http:// or https:// URL' : 'must be an absolute https:// URL' }]);
  }
  return url;
}

/** A return_url, checked as checkBrowserUrl checks it. */
export function checkReturnUrl(value: string | undefined, env: Environment): void {
  if (value !== undefined) checkBrowserUrl(value, env, 'return_url');
}
