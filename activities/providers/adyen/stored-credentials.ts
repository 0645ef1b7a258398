// Adyen's stored-credential fields of a /payments request (docs/connectors.md#stored-credentials), apart
// from the adapter that sends them.

import { Types } from '@adyen/api-library';
import type { RecurringAuthorization } from '../types';

const { ShopperInteractionEnum, RecurringProcessingModelEnum } = Types.checkout.PaymentRequest;

/**
 * A subscription's card, not tokenized at Adyen (https://docs.adyen.com/online-payments/tokenization/mit-framework):
 * the customer-initiated first payment is `Ecommerce`, a merchant-initiated renewal `ContAuth`, both with
 * `recurringProcessingModel: Subscription`; the renewal names the first approval's `networkTxReference`
 * as its card's `networkPaymentReference`. The summary shows the flags and whether an id was sent.
 */
export function storedCredentialFields(recurring: RecurringAuthorization | undefined): {
  fields: Pick<Types.checkout.PaymentRequest, 'shopperInteraction' | 'recurringProcessingModel'>;
  card: Pick<Types.checkout.CardDetails, 'networkPaymentReference'>;
  summary: Record<string, unknown>;
} {
  if (!recurring) return { fields: {}, card: {}, summary: {} };
  const merchant = recurring.initiator === 'merchant';
  const fields = {
    shopperInteraction: merchant ? ShopperInteractionEnum.ContAuth : ShopperInteractionEnum.Ecommerce,
    recurringProcessingModel: RecurringProcessingModelEnum.Subscription,
  };
  const id = merchant ? recurring.networkTransactionId : undefined;
  return { fields, card: id ? { networkPaymentReference: id } : {}, summary: { ...fields, ...(id ? { networkPaymentReference: '[sent]' } : {}) } };
}
