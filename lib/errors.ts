/**
 * Every error reason the API can answer with, and its HTTP status. Pure, so that command clients and
 * activities can speak the catalogue too (docs/api-conventions.md#errors). Routes throw
 * `new ApiError('reason', …)`; one middleware renders the envelope. Nothing builds error JSON by hand.
 */
export const ERRORS = {
  // 400
  validation_failed: { status: 400, message: 'The request is not valid.' },
  invalid_json: { status: 400, message: 'The request body is not valid JSON.' },
  unknown_field: { status: 400, message: 'The request has a field this endpoint does not accept.' },
  payload_too_large: { status: 400, message: 'The request body is larger than 1 MiB.' },
  prod_account_id_required: { status: 400, message: 'A sandbox account needs prod_account_id.' },
  invalid_card: { status: 400, message: 'The card is not valid.' },
  webhook_url_not_allowed: { status: 400, message: 'That URL cannot receive webhooks.' },
  // 401
  missing_authorization: { status: 401, message: 'Authorization: Bearer <token> is required.' },
  invalid_token: { status: 401, message: 'The bearer token is not valid.' },
  token_expired: { status: 401, message: 'The bearer token has expired.' },
  invalid_api_key: { status: 401, message: 'The API key is not valid.' },
  invalid_signature: { status: 401, message: 'The webhook signature is missing or does not verify.' },
  // 402
  capture_declined: { status: 402, message: 'The processor refused the capture.' },
  // 403
  insufficient_permissions: { status: 403, message: 'The credential lacks the permission this needs.' },
  system_actor_required: { status: 403, message: 'Only the system actor may do this.' },
  publishable_key_not_allowed: { status: 403, message: 'A publishable key cannot do this.' },
  account_access_denied: { status: 403, message: 'The credential has no access to that account.' },
  // 404
  not_found: { status: 404, message: 'No such resource.' },
  route_not_found: { status: 404, message: 'No such endpoint.' },
  // 405
  method_not_allowed: { status: 405, message: 'The endpoint does not accept that method.' },
  // 409
  invalid_state: { status: 409, message: 'The resource is not in a state that allows this.' },
  idempotency_key_in_use: { status: 409, message: 'A request with this Idempotency-Key is still in progress.' },
  conflict: { status: 409, message: 'The request conflicts with a concurrent change.' },
  fee_already_exists: { status: 409, message: 'The config already has a fee for that method and installment count.' },
  too_many_attempts: { status: 409, message: 'The payment has failed too many confirmations and takes no more.' },
  charge_disputed: { status: 409, message: 'The charge is disputed: it cannot be refunded while its dispute is open or after it was lost.' },
  // 415
  unsupported_media_type: { status: 415, message: 'Request bodies must be application/json.' },
  // 422
  refund_exceeds_available: { status: 422, message: 'The refund is larger than what remains to refund.' },
  idempotency_key_reused: { status: 422, message: 'This Idempotency-Key was used with a different request.' },
  no_eligible_provider: { status: 422, message: 'No payment provider can take this payment.' },
  key_not_managed: { status: 422, message: 'Only managed keys can be regenerated.' },
  last_owner: { status: 422, message: 'The last owner of an account cannot be removed.' },
  unknown_provider_adapter: { status: 422, message: 'No adapter exists for that provider identifier.' },
  amount_too_large: { status: 422, message: 'The line items add up to more than one payment may be.' },
  invalid_pagination: { status: 422, message: 'These pagination parameters do not name a place in this list.' },
  webhook_endpoint_limit_reached: { status: 422, message: 'The account has as many webhook endpoints as it may have.' },
  api_key_limit_reached: { status: 422, message: 'The account has as many API keys as it may have.' },
  key_outlives_caller: { status: 422, message: 'The key would outlive the expiring key that asks for it.' },
  // 429
  rate_limited: { status: 429, message: 'Too many requests.' },
  too_many_declines: { status: 429, message: 'Too many declined payments from this card, client or key; try again later.' },
  // 431
  headers_too_large: { status: 431, message: 'The request headers are larger than 16 KiB.' },
  // 5xx
  internal_error: { status: 500, message: 'Something went wrong on our side.' },
  temporal_unavailable: { status: 503, message: 'The workflow service is unavailable; try again shortly.' },
  database_unavailable: { status: 503, message: 'The database is unavailable; try again shortly.' },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorReason = keyof typeof ERRORS;

export interface FieldError { path: string; message: string }

export class ApiError extends Error {
  readonly status: number;
  readonly reason: ErrorReason;
  readonly details: Record<string, unknown>;
  readonly headers: Record<string, string>;

  constructor(reason: ErrorReason, message?: string, details: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
    super(message ?? ERRORS[reason].message);
    this.reason = reason;
    this.status = ERRORS[reason].status;
    this.details = details;
    this.headers = headers;
  }

  static validation(fields: FieldError[], reason: 'validation_failed' | 'unknown_field' = 'validation_failed'): ApiError {
    const first = fields[0];
    const message = first ? `${first.path || 'body'}: ${first.message}` : ERRORS[reason].message;
    return new ApiError(reason, message, { fields });
  }

  static notFound(what: string): ApiError {
    return new ApiError('not_found', `No such ${what}.`);
  }
}

/** A status with its indefinite article, for messages: `A CREATED`, `An AUTHORIZED`, `An UNKNOWN`. */
export const withArticle = (status: string): string => `${/^[AEIOU]/i.test(status) ? 'An' : 'A'} ${status}`;
