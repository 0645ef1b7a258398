import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import type { Db } from '../db/knex';
import type { Config } from '../lib/config';
import { ApiError } from '../lib/errors';
import type { Vault } from '../lib/vault';
import { appendEvents, type EventRecord } from '../db/events';
import { closeCheckoutSession, findCheckoutSession, insertCheckoutSession, type CheckoutSessionRow } from '../db/checkout-sessions';
import type { Environment } from '../db/environments';
import { findPayment } from '../db/payments';
import type { PaymentRow } from '../db/payment-rows';
import { serializeCheckoutSession } from '../resources/checkout-sessions';
import { isAlreadyStarted } from '../workflows/client';
import { cancelPayment, PaymentWorkflowClosedError, startPayment } from '../workflows/payments/client';
import { PAYMENT_SEAL_PURPOSE, paymentCommand, type PaymentInput } from '../contracts/payments';
import {
  IN_FLIGHT_PAYMENT_STATUSES, paysSession, type CheckoutActivities, type CheckoutOutcome, type CheckoutRef, type CheckoutSessionInput,
} from '../contracts/checkout';

export interface CheckoutActivityDeps {
  db: Db;
  config: Config;
  vault: Vault;
  /**
   * A Temporal client for the payment commands (start, cancel). Optional: inside a worker the activity
   * uses the worker's own client (activity context); tests calling the activities directly hand one in.
   */
  temporal?: () => Promise<Client>;
}

/** Why an expired session's payment is canceled, as Stripe spells it. */
const ABANDONED = 'abandoned';
/**
 * The expiry's cancel, under one update id per payment: a retry of the activity after its answer was lost
 * gets the first cancel's answer instead of a refusal of CANCELED. (The session's id stays out of it: it
 * is the hosted page's capability, and update ids are in the payment's history.)
 */
const EXPIRY_CANCEL_UPDATE_ID = 'checkout-expiry';

function sessionEvent(ref: CheckoutRef, event: string, row: CheckoutSessionRow, publicUrl: string): EventRecord {
  const { actor } = ref.context;
  return {
    event, accountId: ref.accountId, workspaceId: ref.workspaceId, subjectType: 'checkout_session', subjectId: row.id,
    paymentId: row.payment_id, checkoutSessionId: row.id, data: { object: serializeCheckoutSession(row, publicUrl, null) },
    actorType: actor.type, actorId: actor.id, apiKeyId: actor.apiKeyId, requestId: ref.context.requestId, traceId: ref.context.traceId, spanId: ref.context.spanId,
  };
}

/** The checkout session activities; the workflow proxies them through the contract's CheckoutActivities. */
export function checkoutActivities({ db, config, vault, temporal }: CheckoutActivityDeps) {
  const client = async (): Promise<Client> => (temporal ? temporal() : Context.current().client);

  /** Moves the OPEN session to COMPLETE or EXPIRED with its event, once, in one transaction. */
  async function close(ref: CheckoutRef, status: 'COMPLETE' | 'EXPIRED'): Promise<CheckoutOutcome> {
    const env = ref.environment;
    return db.transaction(async (trx): Promise<CheckoutOutcome> => {
      const row = await closeCheckoutSession(trx, env, ref.sessionId, status);
      if (!row) return { outcome: 'closed', status: (await findCheckoutSession(trx, env, ref.sessionId))?.status ?? status };
      const event = status === 'COMPLETE' ? 'checkout.session.completed' : 'checkout.session.expired';
      await appendEvents(trx, env, [sessionEvent(ref, event, row, config.publicUrl)]);
      return { outcome: status === 'COMPLETE' ? 'completed' : 'expired', status };
    });
  }

  /** What the payment's row decides on its own: paid completes the session, being paid keeps it open. */
  async function decided(ref: CheckoutRef, payment: PaymentRow | undefined): Promise<CheckoutOutcome | undefined> {
    if (!payment) return undefined;
    if (paysSession(payment.status, payment.auto_capture)) return close(ref, 'COMPLETE');
    if (IN_FLIGHT_PAYMENT_STATUSES.includes(payment.status)) return { outcome: 'in_flight', status: 'OPEN', paymentStatus: payment.status };
    return undefined;
  }

  /**
   * Cancels the session's payment as abandoned, through its workflow (sealed as the API seals a cancel).
   * Answers false when it is canceled, true when its workflow refused (it moved meanwhile, or has ended).
   */
  async function cancelAbandoned(ref: CheckoutRef, env: Environment): Promise<boolean> {
    const seal = vault.seal(PAYMENT_SEAL_PURPOSE, paymentCommand({ kind: 'cancel', paymentId: ref.paymentId, reason: ABANDONED }));
    try {
      await cancelPayment(await client(), ref.paymentId, { reason: ABANDONED, seal, context: ref.context },
        async (id) => (await findPayment(db, env, id))?.status, { updateId: EXPIRY_CANCEL_UPDATE_ID });
      return false;
    } catch (err) {
      if (err instanceof PaymentWorkflowClosedError || (err instanceof ApiError && err.reason === 'invalid_state')) return true;
      throw err;
    }
  }

  return {
    async recordCheckoutSession(input: CheckoutSessionInput): Promise<void> {
      await insertCheckoutSession(db, input.environment, input);
    },

    async startCheckoutPayment(input: PaymentInput): Promise<void> {
      try {
        await startPayment(await client(), input);
      } catch (err) {
        // Its workflow ran and ended (a retry long after): the payment exists.
        if (!isAlreadyStarted(err)) throw err;
      }
    },

    async settleCheckoutSession(ref: CheckoutRef): Promise<CheckoutOutcome> {
      const paid = await decided(ref, await findPayment(db, ref.environment, ref.paymentId));
      if (paid?.outcome === 'completed' || paid?.outcome === 'closed') return paid;
      const session = await findCheckoutSession(db, ref.environment, ref.sessionId);
      return !session || session.status === 'OPEN' ? { outcome: 'open', status: 'OPEN' } : { outcome: 'closed', status: session.status };
    },

    async expireCheckoutSession(ref: CheckoutRef): Promise<CheckoutOutcome> {
      const env = ref.environment;
      const session = await findCheckoutSession(db, env, ref.sessionId);
      if (!session) throw ApplicationFailure.nonRetryable('the checkout session has no row', 'not_found');
      if (session.status !== 'OPEN') return { outcome: 'closed', status: session.status };
      const payment = await findPayment(db, env, ref.paymentId);
      const first = await decided(ref, payment);
      if (first) return first;
      if (payment && payment.status !== 'CANCELED' && await cancelAbandoned(ref, env)) {
        // Refused: the payment moved between the read and the cancel (a customer paying, or it ended).
        const moved = await findPayment(db, env, ref.paymentId);
        const then = await decided(ref, moved);
        if (then) return then;
        if (moved?.status !== 'CANCELED') {
          throw ApplicationFailure.retryable(`the payment (${moved?.status ?? 'gone'}) refused its cancel; trying again`, 'checkout_cancel_refused');
        }
      }
      return close(ref, 'EXPIRED');
    },
  } satisfies CheckoutActivities;
}
