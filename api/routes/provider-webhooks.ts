import type Koa from 'koa';
import coBody from 'co-body';
import type { Environment } from '../../db/environments';
import { findCharge, findChargeByProviderReference, updateCharge, type ChargeRow } from '../../db/payments';
import { markProviderEventDelivered, recordProviderEvent, type ProviderEventDelivery } from '../../db/provider-events';
import { openConfigProvider, ProviderConfigNotFoundError, type ConfigProvider } from '../../db/provider-configs';
import { findRefundWithCharge } from '../../db/refunds';
import { disputeIdOf, looksLikeId, newId } from '../../lib/ids';
import { catalogueEntry, isAdapterIdentifier } from '../../lib/providers/catalogue';
import { logger } from '../../lib/logger';
import { storableJson } from '../../lib/storable-text';
import type { ProcessorEvent, ProviderCredentials } from '../../lib/providers/notification-types';
import type { DisputeNotice } from '../../lib/providers/disputes';
import { signalDisputeEvent } from '../../workflows/disputes/client';
import { webhookParser } from '../../lib/providers/webhooks';
import { signalProviderEvent, temporalUnavailableError } from '../../workflows/client';
import type { ProviderEventSignal } from '../../contracts/temporal';
import { paymentWorkflowId } from '../../contracts/payments';
import { refundWorkflowId } from '../../contracts/refunds';
import type { ApiDeps } from '../deps';
import { ApiError } from '../errors';
import { BODY_LIMIT } from '../middleware/body';
import { providerEventsWrongMode } from '../middleware/metrics';
import { providerWebhookLimits } from '../middleware/rate-limit';

/** Where a provider webhook route lives; `webhook_url` on a config is PUBLIC_URL + this + the config id. */
const PROVIDER_WEBHOOK_PATH = '/v1/provider-webhooks/';

const ENVIRONMENTS: Environment[] = ['production', 'sandbox'];

interface Opened extends ConfigProvider { env: Environment; credentials: ProviderCredentials }

async function openConfig(deps: ApiDeps, configId: string): Promise<Opened | undefined> {
  for (const env of ENVIRONMENTS) {
    try {
      return { env, ...(await openConfigProvider(deps.db, deps.vault, env, configId)) };
    } catch (err) {
      if (!(err instanceof ProviderConfigNotFoundError)) throw err;
    }
  }
  return undefined;
}

/** What an event is about among this config's charges and refunds; nothing for objects we did not make. */
async function targetOf(deps: ApiDeps, opened: Opened, event: ProcessorEvent): Promise<{ charge: Pick<ChargeRow, 'id' | 'payment_id'>; refundId?: string } | undefined> {
  const { env } = opened;
  const configId = opened.config.id;
  if (!event.operation || !event.outcome) return undefined;
  if (event.operation === 'refund') {
    if (!event.refundId) return undefined;
    const found = await findRefundWithCharge(deps.db, env, event.refundId);
    // A refund of a charge made through another config is not this config's to settle.
    if (!found?.charge || found.charge.payment_provider_config_id !== configId) return undefined;
    if (!namesTheSameObject(event, found.charge)) return undefined;
    return { charge: found.charge, refundId: found.refund.id };
  }
  const charge = event.chargeId
    ? await findCharge(deps.db, env, event.chargeId)
    : event.providerReference ? await findChargeByProviderReference(deps.db, env, configId, event.providerReference) : undefined;
  if (!charge || charge.payment_provider_config_id !== configId) return undefined;
  if (!namesTheSameObject(event, charge)) return undefined;
  // A notification moves no more than the charge asked for (docs/security.md §10).
  const asked = Number(charge.amount);
  if (event.outcome.kind === 'approved' && (event.outcome.authorizedAmount > asked || event.outcome.capturedAmount > asked)) return undefined;
  return { charge };
}

/**
 * An event names our charge (or refund) by the id we sent, which the processor echoes (Stripe's metadata,
 * Adyen's merchantReference); it is about it only if it also names the processor's object the charge was
 * made as, once the processor has given us that reference (until then the charge holds its own id, or
 * nothing). Another object carrying our id — a PaymentIntent copying our metadata, a modification of
 * another payment — is stored, and settles nothing.
 */
function namesTheSameObject(event: ProcessorEvent, charge: { id: string; provider_reference?: string | null }): boolean {
  const known = charge.provider_reference && charge.provider_reference !== charge.id ? charge.provider_reference : undefined;
  return !known || !event.providerReference || event.providerReference === known;
}

/**
 * POST /v1/provider-webhooks/{provider_config_id}: a processor's notifications for one config. No
 * Authorization header: the config's adapter verifies the processor's signature over the exact bytes
 * with the config's secret (401 `invalid_signature` and nothing changes otherwise). Each verified event is
 * stored once per config (the processor's event id), then signalled to the payment or refund workflow
 * it concerns; events about objects Switchboard did not make are stored and acknowledged. Temporal
 * unreachable → 503, so the processor sends the event again and it is delivered then. Rate-limited per
 * source IP before any of that (429 `rate_limited`, providerWebhookLimits): what it refuses is counted
 * against the sender, what it verifies against the config at that sender.
 */
export function providerWebhooks(deps: ApiDeps): Koa.Middleware {
  const limits = providerWebhookLimits(deps.config.providerWebhookLimit);
  // Every other request passes straight through, without a promise of this middleware's own.
  return (ctx, next) => (ctx.path.startsWith(PROVIDER_WEBHOOK_PATH) ? limited(ctx) : next());

  async function limited(ctx: Koa.Context): Promise<void> {
    const configId = ctx.path.slice(PROVIDER_WEBHOOK_PATH.length);
    ctx.state.routeTemplate = `${PROVIDER_WEBHOOK_PATH}:provider_config_id`;
    await limits.admit(ctx.ip, configId);
    try {
      await receive(ctx, configId);
    } catch (err) {
      if (err instanceof ApiError && err.status < 500 && err.reason !== 'rate_limited') await limits.refused(ctx.ip);
      throw err;
    }
  }

  async function receive(ctx: Koa.Context, configId: string): Promise<void> {
    if (ctx.method !== 'POST') throw new ApiError('method_not_allowed', undefined, {}, { Allow: 'POST' });
    if (!looksLikeId(configId, 'ppc')) throw ApiError.notFound('payment provider config');
    const opened = await openConfig(deps, configId);
    if (!opened || !isAdapterIdentifier(opened.provider.identifier)) throw ApiError.notFound('payment provider config');
    const parse = webhookParser(opened.provider.identifier);

    const rawBody = await coBody.text(ctx, { limit: BODY_LIMIT, encoding: 'utf8' }).catch(() => {
      throw ApiError.validation([{ path: 'body', message: 'must be at most 1 MiB of text' }]);
    });
    const headers = Object.fromEntries(Object.entries(ctx.headers).map(([k, v]) => [k.toLowerCase(), Array.isArray(v) ? v.join(',') : v]));
    const verdict = parse({ rawBody, headers, credentials: opened.credentials });
    if (!verdict.verified) {
      logger.warn({ provider_config_id: configId, reason: verdict.error }, 'provider webhook refused: signature');
      throw new ApiError('invalid_signature');
    }
    await limits.verified(ctx.ip, configId);
    if (verdict.rejected) logger.warn({ provider_config_id: configId, rejected: verdict.rejected }, 'provider webhook: items with a bad signature skipped');

    // Verified, so kept: U+0000 and unpaired surrogates (which Postgres cannot store) become U+FFFD.
    for (const event of verdict.events) await deliver(deps, opened, storableJson(event));
    ctx.status = verdict.reply.status;
    ctx.type = verdict.reply.contentType;
    ctx.body = verdict.reply.body;
  }
}

type WrongMode = 'test_event_on_live_config' | 'live_event_on_sandbox_config';

/**
 * Why an event's mode is not its config's, if it is not: a live-mode event (real money) is nothing to a
 * sandbox account, and a test-mode one nothing to a live account — there test cards "succeed", and a
 * test webhook aimed at a live config would settle real payments with them. A live config of a processor
 * whose events always say their mode (lib/providers: eventsStateMode) takes only those that say live.
 */
function wrongModeOf(opened: Opened, event: ProcessorEvent): WrongMode | undefined {
  if (opened.env === 'sandbox') return event.live === true ? 'live_event_on_sandbox_config' : undefined;
  const { identifier } = opened.provider;
  const statesMode = isAdapterIdentifier(identifier) && catalogueEntry(identifier).eventsStateMode === true;
  return statesMode && event.live !== true ? 'test_event_on_live_config' : undefined;
}

/**
 * An event of the wrong mode is refused: it settles nothing (stored, as any verified event, with no
 * target) and is counted and logged; the processor still gets its usual answer, since a 4xx would only make
 * it send the same event again for days, and Stripe then disables the endpoint, live events included.
 */
function refusedForMode(opened: Opened, event: ProcessorEvent): boolean {
  const reason = wrongModeOf(opened, event);
  if (!reason) return false;
  providerEventsWrongMode.inc({ provider: opened.provider.identifier, reason });
  logger.warn({ provider_config_id: opened.config.id, provider: opened.provider.identifier, processor_event_id: event.eventId, reason }, 'provider webhook: event of the wrong mode refused');
  return true;
}

/** Stores one event (once) and signals its workflow, unless an earlier delivery of it did. */
async function deliver(deps: ApiDeps, opened: Opened, event: ProcessorEvent): Promise<void> {
  const { env } = opened;
  const refused = refusedForMode(opened, event);
  const target = refused ? undefined : await targetOf(deps, opened, event);
  const disputedCharge = refused || !event.dispute ? undefined : await disputedChargeOf(deps, opened, event.dispute);
  const disputed = disputedCharge !== undefined;
  const { row, inserted } = await recordProviderEvent(deps.db, env, {
    id: newId('pev'),
    payment_provider_config_id: opened.config.id,
    account_id: opened.config.account_id,
    processor_event_id: event.eventId,
    type: event.type,
    operation: event.operation ?? null,
    payment_id: (target?.charge ?? disputedCharge)?.payment_id ?? null,
    charge_id: (target?.charge ?? disputedCharge)?.id ?? null,
    refund_id: target?.refundId ?? null,
    outcome: event.outcome ?? null,
    provider_code: event.providerCode ?? null,
    payload: event.payload,
    dispute: disputed ? event.dispute! : null,
  });
  if (!inserted && row.delivered_at) return;
  // A 3-D Secure result travels sealed on the charge (for a later candidate), never in the signal.
  if (target && event.authentication) {
    await updateCharge(deps.db, env, target.charge.id, { authentication_sealed: deps.vault.encryptJson(event.authentication) });
  }
  let delivery: ProviderEventDelivery = 'no_target';
  if (disputedCharge) delivery = await deliverDispute(deps, opened, event.dispute!, row.id);
  else if (target && event.operation && event.outcome) {
    const signal: ProviderEventSignal = {
      eventId: row.id, type: event.type, operation: event.operation, chargeId: target.charge.id, outcome: event.outcome,
      ...(target.refundId ? { refundId: target.refundId } : {}), ...(event.providerCode ? { providerCode: event.providerCode } : {}),
    };
    const workflowId = target.refundId ? refundWorkflowId(target.refundId) : paymentWorkflowId(target.charge.payment_id);
    try {
      delivery = await signalProviderEvent(await deps.temporal(), workflowId, signal);
    } catch (err) {
      throw temporalUnavailableError(err) ?? err;
    }
  }
  await markProviderEventDelivered(deps.db, env, row.id, delivery);
}

/**
 * The charge a dispute is about, among this config's: by our id when the processor echoes it, else by
 * the processor's payment reference; nothing for a charge another config made (stored, applied to nothing).
 */
async function disputedChargeOf(deps: ApiDeps, opened: Opened, notice: DisputeNotice): Promise<Pick<ChargeRow, 'id' | 'payment_id'> | undefined> {
  const { env } = opened;
  const configId = opened.config.id;
  const byId = notice.chargeId && looksLikeId(notice.chargeId, 'ch') ? await findCharge(deps.db, env, notice.chargeId) : undefined;
  const charge = byId ?? (notice.providerReference ? await findChargeByProviderReference(deps.db, env, configId, notice.providerReference) : undefined);
  if (!charge || charge.payment_provider_config_id !== configId) return undefined;
  return namesTheSameObject({ providerReference: notice.providerReference } as ProcessorEvent, charge) ? charge : undefined;
}

/** Hands the stored dispute event to its dispute's workflow, starting it for a dispute's first event. */
async function deliverDispute(deps: ApiDeps, opened: Opened, notice: DisputeNotice, eventId: string): Promise<ProviderEventDelivery> {
  const input = {
    disputeId: disputeIdOf(opened.config.id, notice.processorDisputeId), environment: opened.env, providerConfigId: opened.config.id,
    processorDisputeId: notice.processorDisputeId,
  };
  try {
    await signalDisputeEvent(await deps.temporal(), input, eventId, opened.config.account_id);
    return 'signalled';
  } catch (err) {
    throw temporalUnavailableError(err) ?? err;
  }
}
