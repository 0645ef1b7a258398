/**
 * The HTTP side of the error catalogue (lib/errors.ts): the envelope one middleware renders.
 */
import type { ApiError } from '../lib/errors';

export { ERRORS, ApiError, withArticle } from '../lib/errors';
export type { ErrorReason, FieldError } from '../lib/errors';

export function errorBody(err: ApiError): object {
  return {
    message: err.message,
    success: false,
    error: { code: err.status, message: err.message, details: { reason: err.reason, ...err.details } },
  };
}
