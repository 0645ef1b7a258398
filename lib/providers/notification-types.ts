// What a processor's webhook becomes once verified, and the credentials and 3-D Secure result it may
// carry: pure types, shared by the API (which verifies webhooks) and the adapters (activities).

import type { Approved, HardDecline, SoftDecline } from './outcomes';
import type { DisputeNotice } from './disputes';

/** A provider config's credentials, already validated against the adapter's credentials schema. */
export type ProviderCredentials = Record<string, unknown>;

/**
 * A successful 3-D Secure authentication, passed to another processor so the customer is not challenged
 * twice. Sensitive (the CAVV is a one-time cryptogram): sealed on the charge row, never in workflow
 * history, logs or exchanges.
 */
export interface ExternalAuthentication {
  /** 3-D Secure protocol version, e.g. `2.2.0`. */
  version: string;
  /** Electronic commerce indicator, e.g. `05` (Visa) / `02` (Mastercard). */
  eci: string;
  /** The authentication value (CAVV / AAV), base64. */
  cavv: string;
  /** The directory server's transaction id. */
  dsTransactionId: string;
}

// Inbound: the processor's webhooks (POST /v1/provider-webhooks/{provider_config_id})

/** One webhook request as it arrived: the exact bytes (signatures cover them) and the headers, lower-cased. */
export interface WebhookRequest {
  rawBody: string;
  headers: Record<string, string | undefined>;
  credentials: ProviderCredentials;
}

/** An operation Switchboard asks processors for, as a notification reports on it. */
export type NotifiedOperation = 'authorize' | 'capture' | 'void' | 'refund';

/**
 * One verified event from the processor, normalized. Holds no card data or secret: it is stored,
 * signalled into workflows (so it enters their history) and shown to operators.
 */
export interface ProcessorEvent {
  /**
   * The processor's own id of the event, the dedup key: Stripe's `evt_…`; for Adyen, which has no event
   * id, `<eventCode>:<pspReference>:<success>` (what Adyen sends again when it retries).
   */
  eventId: string;
  /** The processor's type: `payment_intent.succeeded`, `AUTHORISATION`, `CAPTURE`, … */
  type: string;
  /** What it reports on, when it is one of our operations (absent: stored and acknowledged only). */
  operation?: NotifiedOperation;
  /** Our id the processor echoes (Stripe metadata, Adyen merchantReference): the charge for authorize/capture/void… */
  chargeId?: string;
  /** …and the refund for refund. */
  refundId?: string;
  /** The processor's id of the payment (Stripe's pi_…, Adyen's authorization pspReference), to find the charge by. */
  providerReference?: string;
  /**
   * The operation's outcome: approved (with amounts, refundReference for refunds) or a hard/soft
   * decline in our codes. Never `pending`/`unknown`: a notification is the final word.
   */
  outcome?: Approved | HardDecline | SoftDecline;
  /** The processor's own code behind a decline (Adyen's refusalReasonCode / reason, Stripe's decline_code). */
  providerCode?: string;
  /**
   * For an authorization after a challenge: the 3-D Secure result, when the processor's event carries it.
   * Sealed on the charge by the API; never signalled.
   */
  authentication?: ExternalAuthentication;
  /** A dispute's event (chargeback, inquiry, its funds, its end), normalized (lib/providers/disputes.ts). */
  dispute?: DisputeNotice;
  /** The processor says the event is of its live mode (Stripe's signed `livemode`); absent: a test-mode event, or it does not say. */
  live?: boolean;
  /** The event as received, card data and secrets left out: what is stored. */
  payload: Record<string, unknown>;
}

export type WebhookVerdict =
  | {
      verified: true;
      events: ProcessorEvent[];
      /** Items of a batch skipped for a bad signature (Adyen; logged, the others applied). */
      rejected: number;
      /** What the processor expects back (Adyen: `[accepted]`). */
      reply: { status: number; body: string; contentType: string };
    }
  /** Nothing verified: answered 401 and nothing changes. */
  | { verified: false; error: string };
