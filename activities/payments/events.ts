import type { EventRecord } from '../../db/events';
import type { ChargeRow, PaymentRow } from '../../db/payments';
import { serializeCharge, serializePayment } from '../../resources/payments';
import type { RequestContext } from '../../contracts/temporal';
import type { PaymentRef } from '../../contracts/payments';

/** Who asked, as every event records it (ids only). */
function actorOf(context: RequestContext): Partial<EventRecord> {
  return {
    actorType: context.actor.type, actorId: context.actor.id, apiKeyId: context.actor.apiKeyId,
    requestId: context.requestId, traceId: context.traceId, spanId: context.spanId,
  };
}

/** A `payment_intent.*` event, carrying the payment as it is after the transition. */
export function paymentEvent(ref: PaymentRef, event: string, payment: PaymentRow, context: RequestContext, extra: Partial<EventRecord> = {}): EventRecord {
  return {
    event,
    accountId: ref.accountId,
    workspaceId: ref.workspaceId,
    subjectType: 'payment',
    subjectId: ref.paymentId,
    paymentId: ref.paymentId,
    checkoutSessionId: payment.checkout_session_id ?? undefined,
    data: { object: serializePayment(payment) },
    ...actorOf(context),
    ...extra,
  };
}

/** A `charge.*` event of one attempt, carrying the charge as it is after the transition. */
export function chargeEvent(ref: PaymentRef, event: string, charge: ChargeRow, context: RequestContext): EventRecord {
  return {
    event,
    accountId: ref.accountId,
    workspaceId: ref.workspaceId,
    subjectType: 'charge',
    subjectId: charge.id,
    paymentId: ref.paymentId,
    chargeId: charge.id,
    routingPlanId: charge.routing_plan_id ?? undefined,
    attemptId: `${charge.id}#${charge.attempt_no}`,
    data: { object: serializeCharge(charge) },
    ...actorOf(context),
  };
}
