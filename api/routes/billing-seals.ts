import type Koa from 'koa';
import type { Environment } from '../../db/environments';
import { findSubscription } from '../../db/subscriptions';
import { newUlid } from '../../lib/ids';
import {
  BILLING_SEAL_PURPOSE, subscriptionChangeText, subscriptionStartText, type SubscriptionChange, type SubscriptionInput,
} from '../../contracts/billing';
import { changeSubscription } from '../../workflows/billing/client';
import type { Principal } from '../auth/authenticate';
import type { ApiDeps } from '../deps';
import { commandOptions } from '../middleware/idempotency';
import { workflowContext } from '../route';

/**
 * What the billing routes seal before a subscription's workflow acts on it (docs/security.md): the
 * activities write a row or apply a change only with the API's seal over exactly its facts, so a
 * workflow started or updated by anyone else who reaches Temporal bills nobody.
 */

/** The start's input with its seal over every fact the subscription's row is made from. */
export function sealedStart(deps: Pick<ApiDeps, 'vault'>, input: SubscriptionInput): SubscriptionInput {
  return { ...input, seal: deps.vault.seal(BILLING_SEAL_PURPOSE, subscriptionStartText(input)) };
}

/**
 * A change's update id: the request's Idempotency-Key's command id when it has one (a retry is then
 * applied once and answered the same), else a fresh one.
 */
export function changeIdOf(ctx: Koa.Context): string {
  return commandOptions(ctx).updateId ?? `cmd_${newUlid()}`;
}

/**
 * Seals `change` under a fresh (or the request's) update id and sends it to the subscription's workflow;
 * answers once it is applied, or throws 409 `invalid_state` with why it was refused.
 */
export async function sendChange(
  deps: ApiDeps, args: { ctx: Koa.Context; principal: Principal; env: Environment; subscriptionId: string; change: SubscriptionChange },
): Promise<void> {
  const { ctx, principal, env, subscriptionId, change } = args;
  const updateId = changeIdOf(ctx);
  const seal = deps.vault.seal(BILLING_SEAL_PURPOSE, subscriptionChangeText(subscriptionId, updateId, change));
  await changeSubscription(await deps.temporal(), subscriptionId, { change, seal, context: workflowContext(ctx, principal) }, updateId,
    async () => (await findSubscription(deps.db, env, subscriptionId))?.status);
}
