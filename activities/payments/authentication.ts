import { ApplicationFailure } from '@temporalio/activity';
import { findCharge, findPayment, updateCharge } from '../../db/payments';
import type { AbandonArgs, AttemptResult, AuthenticationArgs, PaymentActivities } from '../../contracts/payments';
import { withHeartbeat } from '../heartbeat';
import { openProvider, type OpenProvider } from '../providers/open';
import type { CompleteAuthenticationOutput, ProviderAdapter, ProviderOutcome } from '../providers/types';
import { notifiedAuthorization, withAutoCapture, withCaptureFailureWindow } from './attempts';
import type { PaymentActivityDeps } from './deps';
import { notificationTarget, verifiedNotification } from './notifications';
import { applyOutcome, recordedAttempt } from './outcomes';
import { MissingRowError } from '../../lib/data-errors';
import { commandSeals } from './seals';

/** A charge given up at a processor that may still authorize it (one that can reverse): the workflow listens for that. */
function withLateAuthorizationWindow(result: AttemptResult, adapter: Pick<ProviderAdapter, 'reverse' | 'lateAuthorizationWindowMs'>): AttemptResult {
  return adapter.reverse && adapter.lateAuthorizationWindowMs ? { ...result, lateAuthorizationWindowMs: adapter.lateAuthorizationWindowMs } : result;
}

const STILL_WAITING: Pick<AttemptResult, 'outcome' | 'paymentStatus'> = { outcome: 'requires_action', paymentStatus: 'REQUIRES_ACTION' };

/**
 * The end of a customer authentication (3-D Secure, docs/authentication.md): the charge waiting in
 * REQUIRES_ACTION is settled by the processor's notification, by asking the processor once the customer
 * is back, or given up (timeout, cancel) with the charge voided at the processor.
 */
export function authenticationActivities(deps: PaymentActivityDeps): Pick<PaymentActivities, 'completeAuthentication' | 'abandonAuthentication'> {
  const { db, vault } = deps;
  const seals = commandSeals(vault);

  /** Asks the processor how the authentication ended (with the customer's return parameters, if any). */
  async function askProcessor(args: AuthenticationArgs, provider: OpenProvider, returnParams: Record<string, string>): Promise<CompleteAuthenticationOutput | undefined> {
    const charge = await findCharge(db, args.environment, args.chargeId);
    if (!charge?.provider_reference) return undefined;
    const payment = await findPayment(db, args.environment, args.paymentId);
    const redirectUrl = payment?.next_action?.charge_id === args.chargeId ? payment.next_action.redirect_to_url.url : undefined;
    return withHeartbeat(provider.adapter.completeAuthentication({
      credentials: provider.credentials, idempotencyKey: `${args.chargeId}:authenticate`, reference: args.chargeId, providerReference: charge.provider_reference, returnParams,
      amount: Number(charge.amount), capture: args.capture, ...(redirectUrl ? { redirectUrl } : {}),
    }));
  }

  /** Records how the authorization ended, with its auto-capture; the 3-D Secure result sealed for later candidates. */
  async function record(args: AuthenticationArgs, provider: OpenProvider, ended: CompleteAuthenticationOutput, currency: string): Promise<AttemptResult> {
    if (ended.authentication) {
      await updateCharge(db, args.environment, args.chargeId, { authentication_sealed: vault.encryptJson(ended.authentication) });
    }
    const { exchanges, captured } = await withAutoCapture(args, ended, provider, currency);
    const result = withCaptureFailureWindow(await applyOutcome(db, args, ended.outcome, exchanges, { captured }), provider.adapter);
    const charge = await findCharge(db, args.environment, args.chargeId);
    return { ...result, ...(charge?.authentication_sealed ? { authenticated: true } : {}) };
  }

  return {
    async completeAuthentication(args: AuthenticationArgs): Promise<AttemptResult> {
      const { notification, returned, ...attempt } = args;
      const env = attempt.environment;
      const charge = await findCharge(db, env, attempt.chargeId);
      if (!charge) throw new MissingRowError('charge', attempt.chargeId);
      // Settled already (the other path won, or this activity is retried after its commit): as recorded.
      if (charge.status !== 'REQUIRES_ACTION') {
        let recorded = await recordedAttempt(db, attempt);
        if (recorded.paymentStatus === 'SUCCEEDED') recorded = withCaptureFailureWindow(recorded, (await openProvider(deps, env, attempt.candidate.providerConfigId)).adapter);
        return { ...recorded, ...(charge.authentication_sealed ? { authenticated: true } : {}) };
      }
      const provider = await openProvider(deps, env, attempt.candidate.providerConfigId);
      if (notification) {
        // Only a stored, verified event settles the authentication; a forged signal leaves it waiting.
        const stored = await verifiedNotification(db, env, notification, notificationTarget('authorize', charge));
        return stored ? record(attempt, provider, notifiedAuthorization(attempt, stored, provider), charge.currency) : STILL_WAITING;
      }
      // The customer is back: the return parameters (sealed by the API, read once here) complete the step.
      const returnParams = returned && charge.return_params_sealed ? vault.decryptJson<Record<string, string>>(charge.return_params_sealed) : {};
      const ended = await askProcessor(attempt, provider, returnParams);
      if (!ended || ended.outcome.kind === 'requires_action') {
        // Parameters that settled nothing (a forged return, a customer back too early) are cleared: the
        // next return writes its own and is asked about in turn.
        const cleared = returned && charge.return_params_sealed ? { return_params_sealed: null } : undefined;
        if (ended || cleared) await updateCharge(db, env, attempt.chargeId, { ...cleared, exchanges: ended ? [ended.exchange] : [] });
        return STILL_WAITING;
      }
      if (ended.outcome.kind === 'transport_error') {
        throw ApplicationFailure.retryable(`authentication not confirmed: ${ended.outcome.error}`, 'authentication_pending');
      }
      return record(attempt, provider, ended, charge.currency);
    },

    /**
     * Gives up a wait for the customer. The processor is asked first (the customer may have finished a
     * moment ago: then that outcome stands); otherwise the charge is voided there, so a late completion
     * of the challenge cannot authorize it, and recorded FAILED: `authentication_timeout` fails the
     * payment (a hard stop); a cancel leaves the payment to the cancel that follows.
     */
    async abandonAuthentication(args: AbandonArgs): Promise<AttemptResult> {
      const { reason, command, ...attempt } = args;
      // Given up for a cancel: only the API's cancel voids the charge the customer is authenticating.
      if (reason === 'canceled') seals.cancel({ ...attempt, command: command ?? {} });
      const env = attempt.environment;
      const charge = await findCharge(db, env, attempt.chargeId);
      if (!charge) throw new MissingRowError('charge', attempt.chargeId);
      if (charge.status !== 'REQUIRES_ACTION') {
        // Given up by an earlier try whose answer was lost: it says so again (a charge that ended otherwise is no abandon).
        const recorded = await recordedAttempt(db, attempt);
        if (charge.decline_code !== 'authentication_timeout' && charge.decline_code !== 'canceled') return recorded;
        return withLateAuthorizationWindow(recorded, (await openProvider(deps, env, attempt.candidate.providerConfigId)).adapter);
      }
      const provider = await openProvider(deps, env, attempt.candidate.providerConfigId);
      const ended = await askProcessor(attempt, provider, {});
      if (ended && ended.outcome.kind !== 'requires_action' && ended.outcome.kind !== 'transport_error' && ended.outcome.kind !== 'unknown') {
        return record(attempt, provider, ended, charge.currency);
      }
      const voided = charge.provider_reference
        ? await withHeartbeat(provider.adapter.void({ credentials: provider.credentials, idempotencyKey: `${attempt.chargeId}:void`, providerReference: charge.provider_reference }))
        : undefined;
      if (voided && (voided.outcome.kind === 'transport_error' || voided.outcome.kind === 'unknown')) {
        throw ApplicationFailure.retryable(`void of the abandoned authorization not confirmed: ${voided.outcome.error}`, 'void_pending');
      }
      const exchanges = [...(ended ? [ended.exchange] : []), ...(voided ? [voided.exchange] : [])];
      if (reason === 'canceled') {
        await updateCharge(db, env, attempt.chargeId, { status: 'FAILED', decline_code: 'canceled', exchanges });
        return withLateAuthorizationWindow({ outcome: 'hard_decline', declineCode: 'canceled', decline: { code: 'canceled', decision: 'hard' }, paymentStatus: 'REQUIRES_ACTION' }, provider.adapter);
      }
      const timeout: ProviderOutcome = { kind: 'hard_decline', declineCode: 'authentication_timeout', message: 'The customer did not complete the authentication in time.' };
      return withLateAuthorizationWindow(await applyOutcome(db, attempt, timeout, exchanges), provider.adapter);
    },
  };
}
