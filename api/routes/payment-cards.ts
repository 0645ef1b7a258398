import { Type } from '@sinclair/typebox';
import type { Environment } from '../../db/environments';
import { findUsableCard, insertCard } from '../../db/payment-methods';
import { validateCard } from '../../lib/cards';
import type { ApiDeps } from '../deps';
import { ApiError } from '../errors';
import { Obj } from '../../resources/schemas';

// The card a confirm goes on with (docs/payments.md#which-card-a-payment-may-use), checked or vaulted
// before anything reaches Temporal: only its pm_ id travels into the workflow.

/** An inline card in a confirm (or a create with confirm: true). */
export const CardBody = Obj({
  type: Type.Literal('CARD'),
  card: Obj({
    number: Type.String({ minLength: 1, maxLength: 30 }),
    exp_month: Type.Integer({ minimum: 1, maximum: 12 }),
    exp_year: Type.Integer({ minimum: 0, maximum: 9999 }),
    cvc: Type.String({ minLength: 3, maxLength: 4 }),
    holder_name: Type.Optional(Type.String({ maxLength: 200 })),
  }),
});

/**
 * One answer for every payment_method_id a payment may not use (unknown, another account's, another
 * customer's, another payment's single-use card, deleted, used up), so that it never tells which.
 */
export const unusablePaymentMethod = (path = 'body/payment_method_id') =>
  ApiError.validation([{ path, message: 'is not a payment method this payment can use' }]);

/** The confirm fields, as both `POST /payments/{id}/confirm` and `POST /payments` with `confirm: true` take them. */
export interface ConfirmFields {
  payment_method_id?: string;
  payment_method?: { card: Parameters<typeof validateCard>[0] & { holder_name?: string } };
  save_payment_method?: boolean;
}

/** The payment a confirm is for, as far as its card is concerned. */
export interface ConfirmTarget {
  paymentId: string;
  accountId: string;
  customerId: string | null;
  /** Runs before a valid inline card is saved to `customerId` (create: writes the guest customer first). */
  beforeSave?: () => Promise<void>;
}

/** The card a confirm goes on with, as cardForConfirm found or vaulted it. */
export interface ConfirmCard {
  paymentMethodId: string;
  /** A single-use card this request vaulted, bound to the payment alone. */
  vaulted?: string;
  /** A card this request saved to the payment's customer, its CVC sealed for this confirm's authorization alone. */
  savedNow?: string;
}

/**
 * The pm_ id a confirm goes on with: a `payment_method_id` this payment may use (a saved card of its
 * customer, or its own single-use card; one 400 whatever the reason), or a card given inline, validated
 * and vaulted — saved to the payment's customer when asked and there is one, else bound to this payment
 * alone (`vaulted`). `admit` is shown the card's fingerprint before anything is vaulted (a client-side
 * confirm's decline budgets: api/middleware/decline-limits.ts).
 */
export async function cardForConfirm(
  deps: Pick<ApiDeps, 'db' | 'vault'>, env: Environment, target: ConfirmTarget, body: ConfirmFields,
  admit?: (fingerprint: string) => Promise<void>,
): Promise<ConfirmCard> {
  if (body.payment_method_id) {
    const { paymentId, accountId, customerId } = target;
    const usable = await findUsableCard(deps.db, env, { paymentMethodId: body.payment_method_id, paymentId, accountId, customerId });
    if (!usable) throw unusablePaymentMethod();
    await admit?.(usable.card_fingerprint);
    return { paymentMethodId: body.payment_method_id };
  }
  const inline = body.payment_method;
  if (!inline) throw ApiError.validation([{ path: 'body', message: 'give exactly one of payment_method_id and payment_method' }]);
  const checked = validateCard(inline.card);
  if ('problems' in checked) {
    throw new ApiError('invalid_card', checked.problems[0].message, { fields: checked.problems.map((p) => ({ path: `body/payment_method/card/${p.field}`, message: p.message })) });
  }
  await admit?.(deps.vault.fingerprint(checked.card.pan));
  const saveTo = body.save_payment_method && target.customerId ? target.customerId : null;
  if (saveTo) await target.beforeSave?.();
  const row = await insertCard(deps.db, deps.vault, env, {
    accountId: target.accountId, customerId: saveTo, paymentId: saveTo ? null : target.paymentId,
    card: checked.card, holderName: inline.card.holder_name, cvcForAuthorization: true,
  });
  return saveTo ? { paymentMethodId: row.id, savedNow: row.id } : { paymentMethodId: row.id, vaulted: row.id };
}
