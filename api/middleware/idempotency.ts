import { createHmac } from 'node:crypto';
import { idempotencyReplays } from './metrics';
import type Koa from 'koa';
import stableStringify from 'fast-json-stable-stringify';
import type { Db } from '../../db/knex';
import type { ProcessLease } from '../../db/process-lease';
import {
  claimIdempotencyKey, findIdempotencyKey, IdempotencyClaim, IdempotencyRow, releaseIdempotencyKey, reserveIdempotentResource, storeIdempotentAnswer,
} from '../../db/idempotency';
import { ApiError, errorBody } from '../errors';
import type { Vault } from '../../lib/vault';
import { toApiError } from './errors';
import type { Principal } from '../auth/authenticate';

const MAX_KEY_LENGTH = 255;
const RETENTION_MS = 24 * 60 * 60 * 1000;
/**
 * A claim dies with its process (its lease, db/process-lease.ts); this bounds the rest: a claim made
 * while the lease could not be had, or a request hung this long in a process still alive.
 */
const STALE_LOCK_MS = 5 * 60 * 1000;
/** How often a claim whose release failed is tried again, and how many such claims a process keeps. */
const RELEASE_RETRY_MS = 1_000;
const MAX_LEFT_CLAIMS = 10_000;

/**
 * Keys are scoped to the credential, not only to the account: a key that another credential of the
 * account learns (a read-only key, a publishable key) never reaches the replies stored for it. An API
 * key: its account and its id; a user token: the user, with the account it names; a system token: its
 * workspace and subject (with the account it names), since a system subject means something only within
 * its workspace, and two workspaces' operators (or a user of the same subject) must never share replies.
 */
function scopeOf(principal: Principal, accountId: unknown): string {
  if (principal.kind === 'api_key') return `acct:${principal.accountId}|key:${principal.keyId}`;
  const actor = principal.actorType === 'system' ? `ws:${principal.workspaceId}|sys:${principal.userId}` : `usr:${principal.userId}`;
  return typeof accountId === 'string' && accountId ? `acct:${accountId}|${actor}` : actor;
}

/**
 * The request's fingerprint: an HMAC under the server pepper, not a bare hash, because bodies can carry
 * a card number and a bare hash of a predictable body could be brute-forced back to it.
 */
function requestHash(ctx: Koa.Context, pepper: string): string {
  return createHmac('sha256', pepper)
    .update(stableStringify({ method: ctx.method, path: ctx.path, query: ctx.query, body: ctx.request.body ?? {} }))
    .digest('hex');
}

/**
 * Whether a request of this method takes an Idempotency-Key: the ones that change something and are not
 * safe to send twice as they are (a POST creates or acts; a PATCH may change a subscription's items
 * and bill the difference). GET reads, PUT and DELETE are idempotent by themselves.
 */
export function takesIdempotencyKey(method: string): boolean {
  const m = method.toUpperCase();
  return m === 'POST' || m === 'PATCH';
}

/** The request's Idempotency-Key, when it has one that counts (see takesIdempotencyKey). */
export function idempotencyKeyOf(ctx: Koa.Context): string | undefined {
  return (takesIdempotencyKey(ctx.method) && ctx.get('Idempotency-Key')) || undefined;
}

/**
 * Whether an answer with this status is stored for replay. Client errors are the answer to the request
 * and are kept, so a retried bad request gets the same 400. Not kept: 401/403, which are about the
 * credential, not the request (stored, one would answer the rightful caller's retry); 409 and 429, which
 * pass; 5xx, so that a retry can still succeed.
 */
function kept(status: number): boolean {
  return status < 500 && status !== 401 && status !== 403 && status !== 409 && status !== 429;
}

/**
 * Idempotency-Key on every POST and PATCH: the first request with a key runs and its response is
 * stored; a retry with the same body gets that response back (`Idempotent-Replayed: true`); a retry
 * while the first still runs gets 409 — while its process lives: a claim whose process died (killed
 * mid-request) is taken over by the next retry at once; the same key with another body gets 422. The
 * key is claimed with one INSERT … ON CONFLICT, so concurrent arrivals cannot both run. It runs inside
 * each route, after the route has admitted the credential (api/route.ts): a stored reply goes only to a
 * caller allowed to make the request.
 */
export function idempotency(db: Db, lease: ProcessLease, pepper: string, vault: Vault): Koa.Middleware {
  const left = leftClaims(db);
  return async (ctx, next) => {
    const key = idempotencyKeyOf(ctx);
    if (!key) return next();
    if (key.length > MAX_KEY_LENGTH) {
      throw ApiError.validation([{ path: 'header/Idempotency-Key', message: `must be at most ${MAX_KEY_LENGTH} characters` }]);
    }
    const scope = scopeOf(ctx.state.principal as Principal, ctx.query.account_id);
    const hash = requestHash(ctx, pepper);

    const claim = await claimIdempotencyKey(db, {
      scope, key, requestHash: hash, ownerLease: await lease.id(), retentionMs: RETENTION_MS, staleAfterMs: STALE_LOCK_MS,
    });
    if (!claim) return replay(ctx, await findIdempotencyKey(db, scope, key), hash, vault);

    ctx.state.idempotency = {
      reserve: (fresh: string) => reserveIdempotentResource(db, claim, fresh),
      commandId: commandIdOf(pepper, scope, key),
    } satisfies IdempotencyState;
    const finish = (status: number, body: unknown, headers: Record<string, string>) => (kept(status)
      ? store(db, vault, claim, status, body, headers)
      : releaseIdempotencyKey(db, claim)
    ).catch((err: unknown) => { left.add(claim); throw err; });
    try {
      await next();
    } catch (err) {
      const apiError = toApiError(err, ctx.state.requestId);
      await finish(apiError.status, errorBody(apiError), apiError.headers).catch(() => {});
      throw apiError;
    }
    await finish(ctx.status, ctx.body, {});
  };
}

/** Answers a request whose key another claim holds: its stored reply, or why there is none. */
function replay(ctx: Koa.Context, row: IdempotencyRow | undefined, hash: string, vault: Vault): void {
  if (!row) throw new ApiError('idempotency_key_in_use'); // released between our two statements
  if (row.request_hash !== hash) throw new ApiError('idempotency_key_reused');
  if (row.state !== 'done') throw new ApiError('idempotency_key_in_use'); // or released meanwhile: retry
  ctx.status = row.response_status ?? 200;
  ctx.set(row.response_headers ?? {});
  ctx.set('Idempotent-Replayed', 'true');
  idempotencyReplays.inc();
  ctx.body = unseal(vault, row.response_body);
}

/**
 * Claims whose request ended but could not be finished, Postgres being unreachable at that moment (a
 * cut mid-request). Left as they are, they look held by this process, alive, and would answer every
 * retry of the key with 409 for STALE_LOCK_MS; so the process releases them itself, once a second until
 * Postgres answers. The client saw a 5xx, so releasing (not storing) is the answer that keeps a retry
 * able to succeed, under the resource id reserved for it.
 */
function leftClaims(db: Db): { add(claim: IdempotencyClaim): void } {
  const waiting = new Map<string, IdempotencyClaim>();
  let timer: NodeJS.Timeout | undefined;
  const releaseAll = async () => {
    for (const [id, claim] of waiting) {
      const released = await releaseIdempotencyKey(db, claim).then(() => true, () => false);
      if (!released) break; // Postgres is still away: try again on the next tick
      waiting.delete(id);
    }
    timer = undefined;
    if (waiting.size) schedule();
  };
  const schedule = () => {
    timer ??= setTimeout(() => void releaseAll(), RELEASE_RETRY_MS);
    timer.unref();
  };
  return {
    add(claim) {
      if (waiting.size < MAX_LEFT_CLAIMS) waiting.set(claim.claimId, claim);
      schedule();
    },
  };
}

/**
 * Stored replies are sealed with the vault: a reply may be the one moment a secret is shown (a new API
 * key, a webhook signing secret), and the idempotency table must not keep it readable for 24 hours.
 */
async function store(db: Db, vault: Vault, claim: IdempotencyClaim, status: number, body: unknown, headers: Record<string, string>) {
  await storeIdempotentAnswer(db, claim, { status, body: { sealed: vault.encryptJson(body ?? null) }, headers });
}

function unseal(vault: Vault, stored: unknown): unknown {
  const sealed = (stored as { sealed?: unknown } | null)?.sealed;
  return typeof sealed === 'string' ? vault.decryptJson(sealed) : stored;
}

export interface IdempotencyState {
  /** The id to create the resource under: `fresh`, or the one a crashed earlier try with this key reserved. */
  reserve(fresh: string): Promise<string>;
  /** The id a workflow command sent by this request carries, the same for each retry of it. */
  commandId: string;
}

/** A workflow update's id for (scope, key): keyed by the pepper, so history shows neither the key nor the credential. */
function commandIdOf(pepper: string, scope: string, key: string): string {
  return `idem-${createHmac('sha256', pepper).update(`${scope}\n${key}`).digest('base64url').slice(0, 32)}`;
}

/** The options of a workflow command sent by this request: its retries carry the same update id. */
export function commandOptions(ctx: Koa.Context): { updateId?: string } {
  const state = ctx.state.idempotency as IdempotencyState | undefined;
  return state ? { updateId: state.commandId } : {};
}

/** The id a create route should use: reserved under the request's Idempotency-Key when there is one. */
export async function reserveResourceId(ctx: Koa.Context, fresh: string): Promise<string> {
  const state = ctx.state.idempotency as IdempotencyState | undefined;
  return state ? state.reserve(fresh) : fresh;
}
