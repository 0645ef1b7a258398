// The card methods a built-in provider gets when it is registered without methods of its own.

import type { MethodTemplate, ProviderCapabilities } from './types';

const CARD_NETWORKS = [
  ['VISA', 'Visa'],
  ['MASTERCARD', 'Mastercard'],
  ['AMEX', 'American Express'],
  ['DISCOVER', 'Discover'],
] as const;

/** A credit-card method per network, executed by the adapter `identifier` (strategy SDK). */
export function cardMethodTemplates(identifier: string, installments: boolean): MethodTemplate[] {
  return CARD_NETWORKS.map(([network, brand]) => ({
    name: `${brand} credit card`,
    category: 'CARD',
    type: 'CREDIT_CARD',
    network,
    installments_supported: installments,
    txn_mappings: [
      {
        strategy: 'SDK',
        strategy_identifier: identifier,
        type: 'CARD_PAYMENT',
        capabilities: { authorize: true, capture: true, partial_capture: true, void: true, refund: true, partial_refund: true, installments },
      },
    ],
  }));
}

/** What a card processor with separate capture, voids, (partial) refunds and a status look-up offers. */
export function cardProcessorCapabilities(installments: boolean): ProviderCapabilities {
  return { separateCapture: true, partialCapture: true, void: true, refund: true, partialRefund: true, statusLookup: true, installments };
}
