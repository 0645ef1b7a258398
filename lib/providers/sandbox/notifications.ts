// The sandbox processor's notifications (docs/sandbox-processor.md#3-d-secure-in-the-sandbox, and
// #disputes-in-the-sandbox: disputes.ts reads those): the
// `Simulator-Signature` checked over the exact bytes received with the config's api key, the one event of
// a request normalized to a ProcessorEvent. Pure: the API stores what this returns and signals the workflows.

import { createHmac, timingSafeEqual } from 'node:crypto';
import type { SandboxCredentials } from './credentials';
import { redactSecrets } from '../redact';
import { isObject, parseJson } from '../wire';
import type { DisputeNotice } from '../disputes';
import type { ProcessorEvent, WebhookRequest, WebhookVerdict } from '../notification-types';
import { sandboxDisputeNotice } from './disputes';
import { authenticationOf, chargeOutcome, redactAuthenticationValue } from './outcomes';

/** What the simulator expects back: any 2xx. */
export const SANDBOX_WEBHOOK_REPLY = { status: 200, body: '{"received":true}', contentType: 'application/json' } as const;

/** How old (or how far ahead) a signature's timestamp may be: a replay after that is refused. */
export const SIGNATURE_TOLERANCE_SECONDS = 300;

/** The charge fields a stored event leaves out: card data. */
const CARD_FIELDS = new Set(['last4', 'number', 'card', 'cvc', 'exp_month', 'exp_year']);

/** `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, as the simulator signs. */
export function simulatorSignature(rawBody: string, apiKey: string, unixSeconds: number): string {
  return `t=${unixSeconds},v1=${createHmac('sha256', apiKey).update(`${unixSeconds}.${rawBody}`).digest('hex')}`;
}

/** Why a signature header does not verify, or undefined when it does. */
export function signatureProblem(header: string | undefined, rawBody: string, apiKey: string, nowSeconds: number): string | undefined {
  if (!header) return 'no Simulator-Signature header';
  const parts = header.split(',').map((part) => part.trim().split('='));
  const timestamp = parts.find(([name]) => name === 't')?.[1];
  const signatures = parts.filter(([name, value]) => name === 'v1' && value).map(([, value]) => value);
  if (!timestamp || !/^\d+$/.test(timestamp) || signatures.length === 0) return 'the Simulator-Signature header is malformed';
  if (Math.abs(nowSeconds - Number(timestamp)) > SIGNATURE_TOLERANCE_SECONDS) return 'the signature timestamp is outside the tolerance';
  const expected = createHmac('sha256', apiKey).update(`${timestamp}.${rawBody}`).digest();
  const matches = signatures.some((hex) => {
    const given = /^[0-9a-f]+$/i.test(hex) ? Buffer.from(hex, 'hex') : Buffer.alloc(0);
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  return matches ? undefined : 'no signature matches the body';
}

export function parseSandboxWebhook(request: WebhookRequest, nowSeconds = Math.floor(Date.now() / 1000)): WebhookVerdict {
  const apiKey = (request.credentials as Partial<SandboxCredentials>).api_key;
  if (typeof apiKey !== 'string' || apiKey === '') return { verified: false, error: 'the provider config has no api_key' };
  const problem = signatureProblem(request.headers['simulator-signature'], request.rawBody, apiKey, nowSeconds);
  if (problem) return { verified: false, error: problem };
  const event = parseJson(request.rawBody);
  if (!isObject(event) || typeof event.id !== 'string' || typeof event.type !== 'string' || !isObject(event.data)) {
    return { verified: false, error: 'the body is not a simulator event' };
  }
  const dispute = sandboxDisputeNotice(event.type, event.data, event.created);
  const about = dispute ? disputed(dispute) : notice(event.type, event.data.charge);
  const normalized: ProcessorEvent = { eventId: event.id, type: event.type, ...about, payload: storedEvent(event) };
  return { verified: true, events: [normalized], rejected: 0, reply: { ...SANDBOX_WEBHOOK_REPLY } };
}

type Notice = Omit<ProcessorEvent, 'eventId' | 'type' | 'payload'>;

/** `charge.authentication_completed` reports an authorization's end; other events only name their charge. */
function notice(type: string, charge: unknown): Notice {
  if (!isObject(charge) || typeof charge.id !== 'string') return {};
  const about: Notice = { providerReference: charge.id, ...(typeof charge.idempotency_key === 'string' ? { chargeId: charge.idempotency_key } : {}) };
  if (type !== 'charge.authentication_completed') return about;
  const { outcome, providerCode } = chargeOutcome(charge);
  // Only a final outcome is the notification's word (a charge still waiting is not one).
  if (outcome.kind !== 'approved' && outcome.kind !== 'hard_decline' && outcome.kind !== 'soft_decline') return about;
  const authentication = authenticationOf(charge);
  return {
    ...about,
    operation: 'authorize',
    outcome,
    ...(providerCode ? { providerCode } : {}),
    ...(authentication ? { authentication } : {}),
  };
}

/** A dispute's event names its charge (ours, echoed, and the simulator's) and carries the notice; no operation, no outcome. */
function disputed(dispute: DisputeNotice): Notice {
  return {
    ...(dispute.providerReference ? { providerReference: dispute.providerReference } : {}),
    ...(dispute.chargeId ? { chargeId: dispute.chargeId } : {}),
    dispute,
  };
}

/** The event as stored: no authentication value, no card data. */
function storedEvent(event: Record<string, unknown>): Record<string, unknown> {
  return redactSecrets(withoutCardData(redactAuthenticationValue(event))) as Record<string, unknown>;
}

function withoutCardData(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutCardData);
  if (!isObject(value)) return value;
  return Object.fromEntries(Object.entries(value).filter(([key]) => !CARD_FIELDS.has(key)).map(([key, child]) => [key, withoutCardData(child)]));
}
