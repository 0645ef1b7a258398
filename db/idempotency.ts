import { randomUUID } from 'node:crypto';
import type { Db } from './knex';
import { leaseAlive } from './process-lease';

/**
 * The idempotency store: `core.idempotency_keys`. One row per (scope, key): claimed by the first request,
 * then holding its sealed answer for the retention period. The sealing itself is the caller's (the vault
 * lives with the API); this store only keeps what it is given.
 */

export interface IdempotencyRow {
  scope: string;
  key: string;
  request_hash: string;
  state: 'in_progress' | 'done' | 'released';
  response_status: number | null;
  response_body: unknown;
  response_headers: Record<string, string> | null;
  resource_id: string | null;
  owner_lease: number | null;
  claim_id: string | null;
  locked_at: Date;
  created_at: Date;
  expires_at: Date;
}

const TABLE = 'core.idempotency_keys';

/** One claim of a key: what finishing it (storing its answer, releasing it) is guarded by. */
export interface IdempotencyClaim { scope: string; key: string; claimId: string }

/**
 * Claims (scope, key) for a request with one INSERT … ON CONFLICT, so concurrent arrivals cannot both
 * run: the claim when this request may run, else undefined. The claim names the claiming process's lease (`ownerLease`), so
 * a key whose claiming process died is taken over at once; one whose process is alive stays claimed.
 * An expired key, or one held longer than `staleAfterMs` (a claim without a lease, or a request hung in
 * a live process), is taken over too, and so is a released one. Only a retry of the same request takes
 * over a key still within its retention (another body gets 422 from the caller), and a crashed or
 * failed request's reserved resource id stays reserved for it.
 */
export async function claimIdempotencyKey(db: Db, claim: {
  scope: string; key: string; requestHash: string; ownerLease: number | null; retentionMs: number; staleAfterMs: number;
}): Promise<IdempotencyClaim | undefined> {
  const now = Date.now();
  const claimId = randomUUID();
  const inserted = await db.raw<{ rows: unknown[] }>(
    `INSERT INTO core.idempotency_keys AS k (scope, key, request_hash, state, owner_lease, claim_id, locked_at, created_at, expires_at)
     VALUES (?, ?, ?, 'in_progress', ?, ?, now(), now(), ?)
     ON CONFLICT (scope, key) DO UPDATE
       SET request_hash = EXCLUDED.request_hash, state = 'in_progress', response_status = NULL,
           response_body = NULL, response_headers = NULL, owner_lease = EXCLUDED.owner_lease, claim_id = EXCLUDED.claim_id,
           locked_at = now(), created_at = now(), expires_at = EXCLUDED.expires_at,
           -- a crashed request's reserved resource stays reserved; an expired key starts afresh
           resource_id = CASE WHEN k.expires_at < now() THEN NULL ELSE k.resource_id END
       WHERE k.expires_at < now()
          OR (k.request_hash = EXCLUDED.request_hash AND (k.state = 'released' OR (k.state = 'in_progress'
              AND (k.locked_at < ? OR (k.owner_lease IS NOT NULL AND NOT ${leaseAlive('k.owner_lease')}))))) 
     RETURNING key`,
    [claim.scope, claim.key, claim.requestHash, claim.ownerLease, claimId, new Date(now + claim.retentionMs), new Date(now - claim.staleAfterMs)],
  );
  return inserted.rows.length === 1 ? { scope: claim.scope, key: claim.key, claimId } : undefined;
}

export async function findIdempotencyKey(db: Db, scope: string, key: string): Promise<IdempotencyRow | undefined> {
  return db<IdempotencyRow>(TABLE).where({ scope, key }).first();
}

/**
 * The id to create a resource under: the one reserved under the key already, else `fresh`, reserved now.
 * Not guarded by the claim: whichever claim of the key asks, the resource must be the same one.
 */
export async function reserveIdempotentResource(db: Db, claim: IdempotencyClaim, fresh: string): Promise<string> {
  const [row] = await db<IdempotencyRow>(TABLE).where({ scope: claim.scope, key: claim.key })
    .update({ resource_id: db.raw('COALESCE(resource_id, ?)', [fresh]) as unknown as string })
    .returning('resource_id');
  return row?.resource_id ?? fresh;
}

/** Keeps the (already sealed) answer for replay. */
export async function storeIdempotentAnswer(db: Db, claim: IdempotencyClaim, answer: { status: number; body: unknown; headers: Record<string, string> }): Promise<void> {
  await db(TABLE).where(claimed(claim)).update({
    state: 'done',
    response_status: answer.status,
    response_body: JSON.stringify(answer.body),
    response_headers: JSON.stringify(answer.headers),
  });
}

/**
 * Frees the key: the answer is not one to replay (a retry may still succeed). A key that reserved a
 * resource id keeps it, `released`, so the retry creates that same resource: a start that failed here
 * may have reached Temporal, and a new id would make a second payment.
 */
export async function releaseIdempotencyKey(db: Db, claim: IdempotencyClaim): Promise<void> {
  await db(TABLE).where(claimed(claim)).whereNull('resource_id').del();
  await db(TABLE).where(claimed(claim)).whereNotNull('resource_id').update({ state: 'released', owner_lease: null });
}

const claimed = (claim: IdempotencyClaim) => ({ scope: claim.scope, key: claim.key, claim_id: claim.claimId });

/** Drops keys past their retention; run periodically by the API process. */
export async function purgeExpiredIdempotencyKeys(db: Db): Promise<number> {
  return db(TABLE).where('expires_at', '<', db.fn.now()).del();
}
