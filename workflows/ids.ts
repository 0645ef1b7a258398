import { ulid } from 'ulid';
import type { IdPrefix } from '../lib/ids';

/**
 * Ids minted inside a workflow (a payment's routing plans and charges): ULIDs from the workflow's
 * deterministic clock and seeded Math.random, so a replay mints the same ids and activity retries reuse
 * them. Pure: outside a workflow it is merely a random id. lib/ids.ts mints the ids of everything else.
 */
export function mintId(prefix: Extract<IdPrefix, 'ch' | 'rp'>): string {
  return `${prefix}_${ulid(Date.now(), Math.random)}`;
}
