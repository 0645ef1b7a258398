// Verifying a processor's webhook and reading its events, by adapter identifier. Pure, so the API
// answers the processor (200 or 401) without reaching into the adapters' HTTP code in activities/.

import type { AdapterIdentifier } from './catalogue';
import { parseAdyenWebhook } from './adyen/notifications';
import type { WebhookRequest, WebhookVerdict } from './notification-types';
import { parseSandboxWebhook } from './sandbox/notifications';
import { parseStripeWebhook } from './stripe/notifications';

export type WebhookParser = (request: WebhookRequest) => WebhookVerdict;

const PARSERS: Record<AdapterIdentifier, WebhookParser> = {
  sandbox: parseSandboxWebhook,
  stripe: parseStripeWebhook,
  adyen: parseAdyenWebhook,
};

/** The webhook parser of an adapter. */
export function webhookParser(identifier: AdapterIdentifier): WebhookParser {
  return PARSERS[identifier];
}
