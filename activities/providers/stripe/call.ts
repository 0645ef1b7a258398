// One request to Stripe as the adapter's `send` makes it and records it: shared by the adapter and its
// dispute actions (./disputes.ts), so that neither imports the other.

import type Stripe from 'stripe';
import type { ProviderExchange, ProviderOperation, ProviderOutcome } from '../types';

export interface Call<T> {
  operation: ProviderOperation;
  idempotencyKey: string;
  method: 'GET' | 'POST';
  path: string;
  /** What the exchange record shows of the request: an allow-list, never the card. */
  summary?: Record<string, unknown>;
  send: (stripe: Stripe) => Promise<Stripe.Response<T>>;
  /** What the exchange record shows of the answer (default: all of it). */
  shown?: (value: T) => unknown;
}

export type Reply<T> =
  | { kind: 'ok'; value: T; exchange: Omit<ProviderExchange, 'outcome'> }
  | { kind: 'error'; outcome: ProviderOutcome; exchange: Omit<ProviderExchange, 'outcome'> };
