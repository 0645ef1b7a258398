import type { Knex } from 'knex';
import { appendEvents, appendEventsOfWrite, type EventRecord } from './events';
import { envTable, type Environment } from './environments';
import { firstWrote, onlyIfFirstWrote, type NamedAlongside } from './knex';
import { cardsAfterOutcome, cardsUpdate, singleUseCardsErasure, type NetworkTransactionAnchor } from './payment-methods';
import { lockCharge, updateCharge, updateChargeIn, updatePayment } from './payments';
import {
  chargeAfter, chargeSet, chargesTable, encoded, paymentAfter, paymentsTable,
  type ChargePatch, type ChargeRow, type ChargeState, type PaymentGuard, type PaymentPatch, type PaymentRow,
} from './payment-rows';
import { healthUpsert, type HealthSample } from './provider-health';
import { MissingRowError } from '../lib/data-errors';

/**
 * The one home for writing an attempt's outcome: the charge, its payment, the cards, the provider's
 * health count and the events, by one of two paths that write the same rows
 * (test/payments/outcome-paths.test.ts). The transaction (recordOutcomeInTransaction) is the reference:
 * five statements, read in order. The one statement (recordOutcomeAtOnce) writes the same as data-modifying
 * CTEs of the events' insert, each written only if the charge's update wrote, for the hot path.
 */

/** The first CTE of recordOutcomeAtOnce's statement: every other write in it happens only if this one did. */
const CHARGE_RECORDED = 'charge_recorded';

/** The charge, payment and account an outcome is about. */
export interface OutcomeOf {
  chargeId: string;
  paymentId: string;
  accountId: string;
}

/** What recording an outcome writes, decided (with no I/O) from the charge it starts from. */
export interface OutcomeWrites {
  charge: ChargePatch;
  payment?: PaymentPatch;
  /** The card whose CVC goes (it was sent with this attempt's authorize). */
  wipeCvcOf?: string;
  /** The single-use cards the walk is over with (only with a payment patch that ends the walk). */
  erase?: { paymentId: string; paymentMethodId?: string };
  /** An approval's network transaction id, for the saved card to keep when it has none yet. */
  anchor?: NetworkTransactionAnchor;
  /** The provider's health count, read lazily: only a write that happens needs it. */
  health: (db: Knex) => Promise<HealthSample | undefined>;
  /** The events, showing the charge and (when it changed) the payment as this write leaves them. */
  events: (charge: ChargeRow, payment: PaymentRow | undefined) => EventRecord[];
}

/**
 * The reference path: in one transaction, the charge's update (with its card's: the CVC wipe, the network
 * transaction id kept), the payment's (with
 * the erasure of the cards the walk is over with), then the events with the health count, last so the
 * minute's shared health row is locked only until the commit. `written`: the charge as its attempt just
 * wrote it (CREATED), updated only while it still is; otherwise (or when it no longer is) the charge is
 * locked and the outcome decided from it.
 */
export async function recordOutcomeInTransaction<W extends OutcomeWrites>(
  db: Knex, env: Environment, of: OutcomeOf, written: ChargeRow | undefined, decide: (current: ChargeState) => W,
): Promise<W> {
  return db.transaction(async (trx) => {
    const recordCharge = async (from: ChargeState, unlocked: boolean) => {
      const writes = decide(from);
      // The attempt's own card (its CVC wiped, its network transaction id kept), with the charge's update.
      const card = cardsUpdate(trx, env, { ...(writes.wipeCvcOf ? { cvcOf: writes.wipeCvcOf } : {}), ...(writes.anchor ? { anchor: writes.anchor } : {}) });
      const cvc: NamedAlongside[] = card ? [['cards_updated', card]] : [];
      const charge = unlocked
        ? await updateChargeIn(trx, env, of.chargeId, from.status, writes.charge, cvc)
        : await updateCharge(trx, env, of.chargeId, writes.charge, cvc);
      return charge && { writes, charge };
    };
    const locked = async () => {
      const row = await lockCharge(trx, env, of.chargeId);
      if (!row) throw new MissingRowError('charge', of.chargeId);
      return row;
    };
    const { writes, charge } = (written && await recordCharge(written, true)) || (await recordCharge(await locked(), false))!;
    const { erase } = writes;
    const erasure: NamedAlongside[] = erase ? [['cards_erased', singleUseCardsErasure(trx, env, erase.paymentId, erase.paymentMethodId)]] : [];
    const payment = writes.payment && await updatePayment(trx, env, of.paymentId, writes.payment, erasure);
    const sample = await writes.health(trx);
    // (A statement is a thenable: built here, never returned from an async function, which would run it.)
    const healthCounted = sample && healthUpsert(trx, env, sample);
    await appendEvents(trx, env, writes.events(charge, payment), healthCounted ? [['health_counted', healthCounted]] : []);
    return writes;
  });
}

/**
 * The same rows in one statement, from the charge and the payment as the attempt knows them (`written`,
 * `payment`): the charge's update applies only while the charge is CREATED and the payment's row unchanged
 * (the CTE charge_recorded); the payment's update (payment_updated), the cards' (cards_updated), the
 * health count (health_counted) and the events (the statement's insert) are written only if it is. The events show the rows as this statement leaves them (chargeAfter, paymentAfter). Undefined
 * when it wrote nothing (either row changed meanwhile), or when the outcome has no event to write the
 * rest with: the transaction records it then.
 */
export async function recordOutcomeAtOnce(
  db: Knex, env: Environment, of: OutcomeOf, rows: { written: ChargeRow; payment: PaymentRow }, writes: OutcomeWrites,
): Promise<boolean> {
  const at = new Date();
  const events = writes.events(chargeAfter(rows.written, writes.charge, at), writes.payment && paymentAfter(rows.payment, writes.payment, at));
  if (!events.length) return false;
  const sample = await writes.health(db);
  const paymentUpdated = writes.payment && paymentUpdateIfChargeRecorded(db, env, of.paymentId, writes.payment, at);
  const cardsUpdated = cardsAfterOutcome(db, env, { cvcOf: writes.wipeCvcOf, erase: writes.erase, anchor: writes.anchor }, CHARGE_RECORDED);
  const healthCounted = sample && healthUpsert(db, env, sample, firstWrote(db, CHARGE_RECORDED));
  const alongside: NamedAlongside[] = [];
  if (paymentUpdated) alongside.push(['payment_updated', paymentUpdated]);
  if (cardsUpdated) alongside.push(['cards_updated', cardsUpdated]);
  if (healthCounted) alongside.push(['health_counted', healthCounted]);
  const chargeRecorded = chargeOutcomeUpdate(db, env, of.chargeId, rows.payment, writes.charge, at);
  return (await appendEventsOfWrite(db, env, events, [CHARGE_RECORDED, chargeRecorded], alongside)) !== undefined;
}

/**
 * The update of a charge still CREATED that records its attempt's outcome, unrun: the first CTE of
 * recordOutcomeAtOnce's statement. It applies only while the charge is CREATED and its payment's row is
 * still `payment` (its `version`, which every update of a payment moves on, even two in the same
 * millisecond): that row is locked by the check (`FOR UPDATE`), so nothing changes it before the
 * statement's own update of it. Returns the charge's id when it applies, nothing when it does not (then
 * nothing is written).
 */
export function chargeOutcomeUpdate(db: Knex, env: Environment, id: string, payment: PaymentGuard, patch: ChargePatch, at: Date): Knex.QueryBuilder {
  return chargesTable(db, env).where({ id, status: 'CREATED' })
    .whereExists((unchanged) => {
      void unchanged.select(1).from(envTable(env, 'payments')).where({ id: payment.id, version: payment.version }).forUpdate();
    })
    .update(chargeSet(db, patch, at)).returning('id');
}

/** A payment's update to run with chargeOutcomeUpdate, unrun: written only if the charge's is. */
function paymentUpdateIfChargeRecorded(db: Knex, env: Environment, id: string, patch: PaymentPatch, at: Date): Knex.QueryBuilder {
  return onlyIfFirstWrote(paymentsTable(db, env).where({ id }).update({ ...encoded(db, patch), updated_at: at }), CHARGE_RECORDED);
}
