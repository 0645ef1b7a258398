import { getRandomStream } from '@temporalio/workflow';
import { ulid } from 'ulid';
import type { IdPrefix } from '../lib/ids';

/**
 * Ids minted inside a workflow (a payment's routing plans and charges): ULIDs from the workflow's
 * deterministic clock and a seeded random source, so a replay mints the same ids and activity retries
 * reuse them. Pure: outside a workflow it is merely a random id. lib/ids.ts mints the ids of everything else.
 *
 * `at` is the time part. The workflow clock is the current workflow task's start, which a retried task
 * (its worker died, it timed out) does not share with the attempt before it: an id that reaches a side
 * effect within the same task (a local activity's charge, whose id is the processor's idempotency key)
 * must be minted from a time every attempt agrees on, such as the workflow's start.
 *
 * `random` is the random part's source: the workflow's own stream of ids (`idRandom`), which nothing
 * else draws from. Workflow-wide `Math.random` is shared: tracing's interceptors draw span ids from it
 * when an update is first validated or a signal handled, which a replay does not repeat — ids minted
 * from it then differed on replay from the rows (and idempotency keys) they named.
 */
export function mintId(prefix: Extract<IdPrefix, 'ch' | 'rp'>, at: number = Date.now(), random: () => number = Math.random): string {
  return `${prefix}_${ulid(at, random)}`;
}

/** The workflow's stream for ids: derived from its seed, drawn from by nothing but mintId. Call inside a workflow. */
export function idRandom(): () => number {
  const stream = getRandomStream('switchboard.ids');
  return () => stream.random();
}
