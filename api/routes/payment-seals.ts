import { findAccountSetting } from '../../db/accounts';
import { parseReturnUrlHosts, RETURN_URL_HOSTS, returnUrlHostAllowed } from '../../lib/return-url-hosts';
import { newUlid } from '../../lib/ids';
import {
  carriedSeal, PAYMENT_SEAL_PURPOSE, paymentCommand, startCommand, type ConfirmInput, type PaymentCommand, type PaymentInput,
} from '../../contracts/payments';
import type { ApiDeps } from '../deps';
import { ApiError } from '../errors';

/**
 * What the payment routes seal before a workflow acts on it (docs/security.md §16), and the account's
 * return_url hosts (§17). The seals are the API's word on a command: the activities check them.
 */

/** The API's seal of one payment command. */
export function sealOf(deps: Pick<ApiDeps, 'vault'>, command: PaymentCommand): string {
  return deps.vault.seal(PAYMENT_SEAL_PURPOSE, paymentCommand(command));
}

/** The start's input with its seal over every fact its payment row, customer and timers are made from. */
export function sealedStart(deps: Pick<ApiDeps, 'vault'>, input: PaymentInput): PaymentInput {
  return { ...input, seal: sealOf(deps, startCommand(input)) };
}

/** A fresh one-time id for a confirm or capture (its seal covers it; the activity refuses it used twice). */
const newCommandId = () => `cmd_${newUlid()}`;

/** A confirm with its seal over its command id, the card, the return_url, the installments and the routing hints. */
export function sealedConfirm(deps: Pick<ApiDeps, 'vault'>, paymentId: string, confirm: ConfirmInput): ConfirmInput {
  const { paymentMethodId, returnUrl, installments, routing } = confirm;
  const commandId = newCommandId();
  const seal = sealOf(deps, { kind: 'confirm', paymentId, commandId, paymentMethodId, returnUrl, installments, routing });
  return { ...confirm, seal: carriedSeal(commandId, seal) };
}

/** A capture's seal over its command id and the amount asked for (none: the whole authorization). */
export function sealedCapture(deps: Pick<ApiDeps, 'vault'>, paymentId: string, amount: number | undefined): string {
  const commandId = newCommandId();
  return carriedSeal(commandId, sealOf(deps, { kind: 'capture', paymentId, commandId, amount }));
}

/**
 * A return_url on a host the account's `return_url_hosts` allows (any, when the list is empty or unset):
 * 400 at `body/return_url` otherwise. The scheme rule is checked before (checkReturnUrl).
 */
export async function checkReturnUrlHost(deps: Pick<ApiDeps, 'db'>, accountId: string, value: string | undefined): Promise<void> {
  if (value === undefined) return;
  const hosts = parseReturnUrlHosts((await findAccountSetting(deps.db, accountId, RETURN_URL_HOSTS))?.value);
  if (!returnUrlHostAllowed(hosts, new URL(value))) {
    throw ApiError.validation([{ path: 'body/return_url', message: `host ${new URL(value).hostname} is not one of the account's return_url_hosts` }]);
  }
}

/** Whether a stored return_url is still on a host the account allows (the list may have narrowed since the confirm). */
export async function returnUrlStillAllowed(deps: Pick<ApiDeps, 'db'>, accountId: string, returnUrl: string): Promise<boolean> {
  const hosts = parseReturnUrlHosts((await findAccountSetting(deps.db, accountId, RETURN_URL_HOSTS))?.value);
  try {
    return returnUrlHostAllowed(hosts, new URL(returnUrl));
  } catch {
    return false;
  }
}
