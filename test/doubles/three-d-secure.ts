// What the processors' doubles share for 3-D Secure (docs/connectors.md): the test cards whose issuer
// asks for authentication, the issuer's challenge page (GET shows it; its one form POSTs
// `action=approve|fail` back to the same URL, and the double answers 303 to the payment's return URL),
// and test authentication results that any double recognises as issued by a double, so that an
// authentication made at one double can be passed on to another as external 3-D Secure data.

import { createHmac, randomInt, randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { ProviderOutcome } from '../../activities/providers/types';

/** How the issuer of a 3-D Secure test card behaves (the numbers are Stripe's published test cards). */
export interface ThreeDSTestCard {
  /**
   * When the issuer asks for a challenge: `always`; `when_requested` (only when the merchant asks for
   * one); `step_up` (declines asking for authentication unless the merchant asks for one, then challenges).
   */
  challenge: 'always' | 'when_requested' | 'step_up';
  /** The issuer declines the payment once the cardholder has authenticated. */
  declinesAfterAuthentication?: boolean;
}

export const THREE_DS_TEST_CARDS: Readonly<Record<string, ThreeDSTestCard>> = {
  '4000002760003184': { challenge: 'always' },
  '4000000000003220': { challenge: 'always' },
  '4000008400001629': { challenge: 'always', declinesAfterAuthentication: true },
  '4000000000003055': { challenge: 'when_requested' },
  '4000002500003155': { challenge: 'step_up' },
};

/**
 * What the issuer does with an authorization: `authorize`, `challenge` the cardholder, refuse it as
 * `authentication_required` (the step-up card without a request), or `decline` (an authenticated card
 * whose issuer says no). `authenticated`: the request carries a test authentication a double issued.
 * `merchantInitiated`: an off-session stored-credential transaction (the customer absent, nobody to
 * challenge): the step-up card approves it when it references an earlier approval's network transaction
 * id (Stripe's "unless set up for off-session"), the always-authenticate cards refuse it
 * `authentication_required`, so that the merchant brings the customer back.
 */
export function issuerStep(
  number: string, { requested, authenticated, merchantInitiated }: { requested: boolean; authenticated: boolean; merchantInitiated?: { networkTransactionId?: string } },
): 'authorize' | 'challenge' | 'authentication_required' | 'decline' {
  const card = THREE_DS_TEST_CARDS[number];
  if (!card) return 'authorize';
  if (authenticated) return card.declinesAfterAuthentication ? 'decline' : 'authorize';
  if (merchantInitiated) {
    if (card.challenge === 'always') return 'authentication_required';
    return card.challenge === 'step_up' && !merchantInitiated.networkTransactionId ? 'authentication_required' : 'authorize';
  }
  if (card.challenge === 'always' || requested) return 'challenge';
  return card.challenge === 'step_up' ? 'authentication_required' : 'authorize';
}

/** A network transaction id as the card networks' look (15 digits), made up by a double for an approval. */
export function networkTransactionId(): string {
  return `${randomInt(1, 10)}${String(randomInt(0, 1e7)).padStart(7, '0')}${String(randomInt(0, 1e7)).padStart(7, '0')}`;
}

// ---------------------------------------------------------------------------------------------------
// Test authentication results

/** A 3-D Secure result as the doubles issue and accept it (the fields of the contract's ExternalAuthentication). */
export interface TestAuthentication {
  version: string;
  eci: string;
  /** Base64 of 20 bytes, as a real CAVV. */
  cavv: string;
  dsTransactionId: string;
}

const CAVV_KEY = 'switchboard test doubles: 3-D Secure';

function cavvOf(dsTransactionId: string): string {
  return createHmac('sha256', CAVV_KEY).update(dsTransactionId).digest().subarray(0, 20).toString('base64');
}

/** A successful authentication, as the issuer's access control server would report it. */
export function issueAuthentication(network: 'visa' | 'mastercard' | string = 'visa'): TestAuthentication {
  const dsTransactionId = randomUUID();
  return { version: '2.2.0', eci: network === 'mastercard' ? '02' : '05', cavv: cavvOf(dsTransactionId), dsTransactionId };
}

/** Whether a CAVV is one a double issued for that directory-server transaction (a forged or reused-elsewhere one is not). */
export function issuedByADouble(cavv: unknown, dsTransactionId: unknown): boolean {
  return typeof cavv === 'string' && typeof dsTransactionId === 'string' && cavv === cavvOf(dsTransactionId);
}

// ---------------------------------------------------------------------------------------------------
// The challenge page

export type ChallengeAction = 'approve' | 'fail';

/** `/__double/3ds/<reference>`: where a double serves the challenge of one payment. */
const CHALLENGE_PATH = /^\/__double\/3ds\/([^/]+)$/;

export function challengeUrl(base: string, reference: string): string {
  return `${base}/__double/3ds/${encodeURIComponent(reference)}`;
}

/** What a double says about one payment's challenge. */
export interface Challenge {
  /** Shown on the page: who asks and for what. */
  issuer: string;
  description: string;
  /**
   * The first POST decides (approve or fail) and changes the payment; any later one changes nothing.
   * Either way: where the browser goes next (the payment's return URL with the processor's parameters),
   * or a reason the payment cannot be authenticated (409).
   */
  submit(action: ChallengeAction): { location: string } | { refused: string };
}

/**
 * Serves `GET|POST /__double/3ds/<reference>` when the request is for it (true), with `find` telling the
 * payment's challenge (undefined: 404). No API key: the customer's browser comes here.
 */
export function serveChallenge(
  method: string, pathname: string, body: string, res: ServerResponse, find: (reference: string) => Challenge | undefined,
): boolean {
  const match = CHALLENGE_PATH.exec(pathname);
  if (!match) return false;
  const reference = decodeURIComponent(match[1]);
  const challenge = find(reference);
  if (!challenge) {
    html(res, 404, page('Not found', `<p>No payment ${escape(reference)} awaits authentication here.</p>`));
    return true;
  }
  if (method === 'GET') {
    html(res, 200, page(`${challenge.issuer}: 3-D Secure`, `<p>${escape(challenge.description)}</p>
<form method="post" action="${escape(pathname)}">
  <button type="submit" id="complete" name="action" value="approve">Complete</button>
  <button type="submit" id="fail" name="action" value="fail">Fail</button>
</form>`));
    return true;
  }
  if (method !== 'POST') {
    res.writeHead(405, { allow: 'GET, POST' }).end();
    return true;
  }
  const action = new URLSearchParams(body).get('action');
  if (action !== 'approve' && action !== 'fail') {
    html(res, 400, page('Bad request', '<p>The form sends action=approve or action=fail.</p>'));
    return true;
  }
  const answer = challenge.submit(action);
  if ('refused' in answer) html(res, 409, page('Conflict', `<p>${escape(answer.refused)}</p>`));
  else res.writeHead(303, { location: answer.location }).end();
  return true;
}

/** `url` with `params` appended to its query: `?` when it has none yet, `&` otherwise; a fragment stays last. */
export function withParams(url: string, params: Record<string, string>): string {
  const at = url.indexOf('#');
  const [base, fragment] = at < 0 ? [url, ''] : [url.slice(0, at), url.slice(at)];
  const query = new URLSearchParams(params).toString();
  const separator = !base.includes('?') ? '?' : base.endsWith('?') || base.endsWith('&') ? '' : '&';
  return `${base}${separator}${query}${fragment}`;
}

/**
 * What a customer's browser does on the page, for tests: POSTs the form with `action` and answers the
 * status and the `Location` the double redirects to (not followed).
 */
export async function submitChallenge(redirectUrl: string, action: ChallengeAction): Promise<{ status: number; location?: string }> {
  const res = await fetch(redirectUrl, {
    method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ action }).toString(),
  });
  await res.arrayBuffer();
  return { status: res.status, location: res.headers.get('location') ?? undefined };
}

/**
 * The customer through the page: POSTs `action` and comes back — the URL the double sent the browser to,
 * and its query parameters as the engine's return endpoint receives them. Throws unless answered 303.
 */
export async function passChallenge(redirectUrl: string, action: ChallengeAction): Promise<{ location: string; returnParams: Record<string, string> }> {
  const { status, location } = await submitChallenge(redirectUrl, action);
  if (status !== 303 || !location) throw new Error(`the challenge page answered ${status}, not a redirect`);
  return { location, returnParams: Object.fromEntries(new URL(location).searchParams) };
}

/** The redirect of a requires_action outcome; throws on any other outcome. */
export function requiresActionOf(outcome: ProviderOutcome): { providerReference: string; redirectUrl: string } {
  if (outcome.kind !== 'requires_action') throw new Error(`expected requires_action, got ${JSON.stringify(outcome)}`);
  return outcome;
}

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>${escape(title)}</title></head>
<body>
<h1>${escape(title)}</h1>
${body}
</body>
</html>
`;
}

function html(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8' }).end(text);
}

function escape(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
