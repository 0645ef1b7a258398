// Reading the simulator's answers: a charge (or a refund, or an error) to a ProviderOutcome, and the 3-D
// Secure data a charge carries. Pure, shared by the adapter's calls and its notifications.

import { isObject } from '../wire';
import type { ExternalAuthentication } from '../notification-types';
import type { HardDecline, ProviderOutcome, SoftDecline } from '../outcomes';
import { declineDecision } from './decline-codes';

/** The simulator's charge fields every outcome needs. */
interface WireCharge {
  id: string;
  status?: string;
  authorized_amount: number;
  captured_amount: number;
  refunded_amount: number;
  decline_code?: string | null;
  next_action?: unknown;
  /** An approved charge's network transaction id (the simulator makes one up per approval). */
  network_transaction_id?: string | null;
}

/** The one-time authentication value, which no record may keep (exchanges, stored events). */
const AUTHENTICATION_VALUE = 'cavv';

export function declineOutcome(declineCode: string, message?: string): HardDecline | SoftDecline {
  return declineDecision(declineCode) === 'hard'
    ? { kind: 'hard_decline', declineCode, ...(message ? { message } : {}) }
    : { kind: 'soft_decline', declineCode, ...(message ? { message } : {}) };
}

/** The code of the simulator's outage answer (503), which it gives only when it recorded nothing. */
const NOT_PROCESSED_CODE = 'provider_unavailable';

/**
 * The outcome an answer means. `chargeNow` is the charge as a look-up shows it today, which tells the end
 * of an authorization that answered `requires_action`.
 */
export function outcomeOf(status: number, body: unknown, chargeNow?: unknown): ProviderOutcome {
  if (status >= 200 && status < 300) {
    const refund = isObject(body) && body.object === 'refund' ? body : undefined;
    // Prefer the charge as it is now (a status look-up), else as the answer showed it.
    const charge = asCharge(chargeNow) ?? asCharge(refund ? refund.charge : body);
    // A success we cannot read may still have moved money: reconcile rather than guess.
    if (!charge) return { kind: 'unknown', error: `unreadable HTTP ${status} answer` };
    const { outcome } = chargeOutcome(charge);
    return outcome.kind === 'approved' && refund && typeof refund.id === 'string' ? { ...outcome, refundReference: refund.id } : outcome;
  }
  // Only the processor's own "unavailable, nothing done" answer may cascade; any other 5xx may have
  // charged, so it is reconciled by key like a lost answer (docs/sandbox-processor.md#adapters-activitiesproviders).
  if (status >= 500) {
    const code = errorCodeOf(body);
    const error = `HTTP ${status} ${code ?? ''}`.trim();
    return status === 503 && code === NOT_PROCESSED_CODE ? { kind: 'transport_error', error } : { kind: 'unknown', error };
  }
  if (status >= 400) {
    const declineCode = errorCodeOf(body) ?? `http_${status}`;
    const message = errorMessageOf(body);
    // The api key refused: this config's credentials, not the card (another config may work), whatever
    // the simulator calls it (its `authentication_failed` there is not the cardholder failing 3-D Secure).
    if (status === 401 || status === 403) return { kind: 'soft_decline', declineCode: 'invalid_credentials', ...(message ? { message } : {}) };
    return declineOutcome(declineCode, message);
  }
  return { kind: 'unknown', error: `unexpected HTTP ${status}` };
}

/**
 * Where a charge stands: waiting for the cardholder (`requires_action`), declined (by the decline table;
 * `providerCode` is the simulator's code), or approved with its amounts.
 */
export function chargeOutcome(value: unknown): { outcome: ProviderOutcome; providerCode?: string } {
  const charge = asCharge(value);
  if (!charge) return { outcome: { kind: 'unknown', error: 'unreadable charge' } };
  if (charge.status === 'requires_action') {
    const url = redirectUrlOf(charge.next_action);
    return { outcome: url ? { kind: 'requires_action', providerReference: charge.id, redirectUrl: url } : { kind: 'unknown', error: 'a charge requires action but names no redirect URL' } };
  }
  if (charge.status === 'declined') {
    const declineCode = charge.decline_code || 'card_declined';
    return { outcome: declineOutcome(declineCode), providerCode: declineCode };
  }
  return {
    outcome: {
      kind: 'approved',
      providerReference: charge.id,
      authorizedAmount: charge.authorized_amount,
      capturedAmount: charge.captured_amount,
      refundedAmount: charge.refunded_amount,
      ...(typeof charge.network_transaction_id === 'string' && charge.network_transaction_id ? { networkTransactionId: charge.network_transaction_id } : {}),
    },
  };
}

/** The 3-D Secure result a charge carries (the simulator shows it to the key that made the charge, once authenticated). */
export function authenticationOf(charge: unknown): ExternalAuthentication | undefined {
  if (!isObject(charge) || !isObject(charge.three_d_secure)) return undefined;
  const { version, eci, cavv, ds_transaction_id: dsTransactionId } = charge.three_d_secure;
  if (typeof version !== 'string' || typeof eci !== 'string' || typeof cavv !== 'string' || typeof dsTransactionId !== 'string') return undefined;
  return { version, eci, cavv, dsTransactionId };
}

/** A copy with every authentication value (cavv) masked, at any depth. */
export function redactAuthenticationValue(value: unknown, depth = 0): unknown {
  if (depth > 10) return '[truncated]';
  if (Array.isArray(value)) return value.map((item) => redactAuthenticationValue(item, depth + 1));
  if (!isObject(value)) return value;
  return Object.fromEntries(Object.entries(value).map(([key, child]) => [
    key, key.toLowerCase() === AUTHENTICATION_VALUE ? '[redacted]' : redactAuthenticationValue(child, depth + 1),
  ]));
}

function errorCodeOf(body: unknown): string | undefined {
  return isObject(body) && isObject(body.error) && typeof body.error.code === 'string' ? body.error.code : undefined;
}

function errorMessageOf(body: unknown): string | undefined {
  return isObject(body) && isObject(body.error) && typeof body.error.message === 'string' ? body.error.message : undefined;
}

function asCharge(value: unknown): WireCharge | undefined {
  if (!isObject(value) || typeof value.id !== 'string') return undefined;
  const amounts = [value.authorized_amount, value.captured_amount, value.refunded_amount];
  return amounts.every((amount) => typeof amount === 'number') ? (value as unknown as WireCharge) : undefined;
}

function redirectUrlOf(nextAction: unknown): string | undefined {
  if (!isObject(nextAction) || !isObject(nextAction.redirect_to_url)) return undefined;
  const url = nextAction.redirect_to_url.url;
  return typeof url === 'string' && url !== '' ? url : undefined;
}
