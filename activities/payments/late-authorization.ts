import { ApplicationFailure } from '@temporalio/activity';
import { findCharge, updateCharge, type ChargeRow } from '../../db/payments';
import { providerEventsOfCharge, type ProviderEventRow } from '../../db/provider-events';
import { MissingRowError } from '../../lib/data-errors';
import type { LateAuthorizationArgs, LateAuthorizationResult, PaymentActivities } from '../../contracts/payments';
import { withHeartbeat } from '../heartbeat';
import { notificationExchange } from '../providers/exchange';
import type { ProviderExchange } from '../providers/types';
import { openProvider } from '../providers/open';
import type { PaymentActivityDeps } from './deps';
import { notificationTarget, verifiedNotification } from './notifications';

/** What the charge's `details.reversal` records of a reversal asked for (ids and facts only). */
export interface ChargeReversal {
  /** Why: the processor authorized the charge after it was given up (`late_authorization`). */
  reason: 'late_authorization';
  /** `requested`: the processor received it (its CANCEL_OR_REFUND notification tells the end); `refused`: it said no. */
  status: 'requested' | 'refused';
  /** The stored AUTHORISATION (pev_…) that showed the authorization standing. */
  provider_event_id: string;
  /** The processor's id of the reversal (Adyen's modification pspReference). */
  reference?: string;
  decline_code?: string;
  requested_at: string;
}

/** The idempotency key of a charge's reversal: one per charge, so however often it is asked, the processor reverses once. */
export const reversalKey = (chargeId: string) => `${chargeId}:reversal`;

/** The charge's stored notification about `operation` with an approval, from the config it was made through. */
function approvedNotification(events: ProviderEventRow[], charge: ChargeRow, operation: 'authorize' | 'void'): ProviderEventRow | undefined {
  return events.find((e) => e.operation === operation && e.outcome?.kind === 'approved' && e.payment_provider_config_id === charge.payment_provider_config_id);
}

/** A void of the charge the processor received (answered `pending`) whose notification is not stored yet. */
function voidAwaitingNotice(charge: ChargeRow, events: ProviderEventRow[]): boolean {
  const sent = (charge.exchanges as ProviderExchange[]).some((e) => e.operation === 'void' && e.outcome === 'pending');
  return sent && !events.some((e) => e.operation === 'void' && e.payment_provider_config_id === charge.payment_provider_config_id);
}

/**
 * The activity a payment workflow calls for a notification about a charge it gave up while the customer
 * authenticated (docs/authentication.md#timeout-and-cancel): the processor authorized it after all (a late
 * AUTHORISATION), or refused the void sent when it was given up (a CANCELLATION refused).
 */
export function lateAuthorizationActivities(deps: PaymentActivityDeps): Pick<PaymentActivities, 'reverseLateAuthorization'> {
  const { db } = deps;
  return {
    /**
     * Only a stored, verified notification about the charge counts (a forged signal is `ignored`), and the
     * decision reads every stored notification of the charge, so the order they come in does not matter: an
     * authorization stands when one was reported and no void went through. Then the charge is reversed at
     * the processor under `<charge>:reversal` and the request recorded on it, once (a repeat finds it recorded).
     */
    async reverseLateAuthorization(args: LateAuthorizationArgs): Promise<LateAuthorizationResult> {
      const env = args.environment;
      const charge = await findCharge(db, env, args.chargeId);
      if (!charge) throw new MissingRowError('charge', args.chargeId);
      const operation = args.notification.operation === 'void' ? 'void' : 'authorize';
      if (!await verifiedNotification(db, env, args.notification, notificationTarget(operation, charge))) return { outcome: 'ignored' };
      const recorded = charge.details.reversal as ChargeReversal | undefined;
      if (recorded) return recorded.status === 'refused' ? { outcome: 'refused', message: recorded.decline_code } : { outcome: 'reversed' };
      const events = await providerEventsOfCharge(db, env, charge.id);
      if (approvedNotification(events, charge, 'void')) return { outcome: 'voided' };
      // The void sent when the charge was given up awaits its notification: until it says whether the void
      // went through, a reversal may be one too many (the two notifications can come in either order).
      if (voidAwaitingNotice(charge, events)) return { outcome: 'waiting' };
      const authorization = approvedNotification(events, charge, 'authorize');
      if (!authorization?.outcome || authorization.outcome.kind !== 'approved') return { outcome: 'waiting' };
      const provider = await openProvider(deps, env, charge.payment_provider_config_id ?? '');
      if (!provider.adapter.reverse) return { outcome: 'ignored' };
      const providerReference = charge.provider_reference ?? authorization.outcome.providerReference;
      const reversed = await withHeartbeat(provider.adapter.reverse({ credentials: provider.credentials, idempotencyKey: reversalKey(charge.id), providerReference }));
      const { outcome } = reversed;
      if (outcome.kind === 'transport_error' || outcome.kind === 'unknown') {
        throw ApplicationFailure.retryable(`reversal of the late authorization not confirmed: ${outcome.error}`, 'reversal_pending');
      }
      const refused = outcome.kind === 'hard_decline' || outcome.kind === 'soft_decline' ? outcome : undefined;
      const reversal: ChargeReversal = {
        reason: 'late_authorization', status: refused ? 'refused' : 'requested', provider_event_id: authorization.id,
        ...(outcome.kind === 'pending' && outcome.operationReference ? { reference: outcome.operationReference } : {}),
        ...(refused ? { decline_code: refused.declineCode } : {}), requested_at: new Date().toISOString(),
      };
      const stored = { eventId: authorization.id, type: authorization.type, operation: 'authorize' as const, chargeId: charge.id, outcome: authorization.outcome };
      await updateCharge(db, env, charge.id, {
        details: { ...charge.details, reversal }, exchanges: [notificationExchange(stored, charge.id), reversed.exchange],
      });
      return refused ? { outcome: 'refused', message: refused.message ?? refused.declineCode } : { outcome: 'reversed' };
    },
  };
}
