import { ulid } from 'ulid';
import type { IdPrefix } from '../lib/ids';

/**
 * Ids minted inside a workflow (a payment's routing plans and charges): ULIDs from the workflow's
 * deterministic clock and seeded Math.random, so a replay mints the same ids and activity retries reuse
 * them. Pure: outside a workflow it is merely a random id. lib/ids.ts mints the ids of everything else.
 *
 * `at` is the time part. The workflow clock is the current workflow task's start, which a retried task
 * (its worker died, it timed out) does not share with the attempt before it: an id that reaches a side
 * effect within the same task (a local activity's charge, whose id is the processor's idempotency key)
 * must be minted from a time every attempt agrees on, such as the workflow's start. The seeded random
 * part keeps such ids apart.
 */
export function mintId(prefix: Extract<IdPrefix, 'ch' | 'rp'>, at: number = Date.now()): string {
  return `${prefix}_${ulid(at, Math.random)}`;
}
