import { createHash, randomFillSync } from 'node:crypto';
import { monotonicFactory, ulid as ulidOf } from 'ulid';

/**
 * ulid's own generator asks the CSPRNG (through webcrypto) for one byte per character: sixteen calls per
 * id, a visible share of a payment's CPU in the profiles (docs/performance.md). This one draws the same
 * CSPRNG's bytes from a pool refilled 4 KiB at a time; a byte over 256 gives each of ulid's 32 characters
 * the same chance.
 */
const pool = Buffer.alloc(4096);
let poolAt = pool.length;
function pooledRandom(): number {
  if (poolAt === pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  return pool[poolAt++] / 256;
}

// Monotonic: ids minted in the same millisecond still sort in the order they were made, so rows written
// together (the events of one transition) list in that order.
const ulid = monotonicFactory(pooledRandom);

/** A ULID with fresh randomness every time (not monotonic): request and trace ids. */
export function newUlid(): string {
  return ulidOf(undefined, pooledRandom);
}

/** Type prefixes of every id Switchboard issues. */
export const ID_PREFIXES = [
  'ws', 'usr', 'acct', 'mem', 'key', 'ntf', 'cus', 'addr', 'pm', 'pay', 'ch', 'rp', 'evt', 're', 'pp',
  'ppm', 'ppc', 'fee', 'rule', 'we', 'whd', 'wha', 'set', 'pev', 'aud', 'cs', 'plink', 'prod', 'price', 'sub', 'si', 'in', 'clock', 'dp',
] as const;
export type IdPrefix = (typeof ID_PREFIXES)[number];

/** A time-sortable opaque id such as `pay_01J…`. */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${ulid()}`;
}

/**
 * An id that is also a bearer capability (a checkout session's page, a payment link): fresh randomness
 * every time (80 bits), where a monotonic id minted in the same millisecond as another is that id plus one.
 */
export function newUnguessableId(prefix: IdPrefix): string {
  return `${prefix}_${newUlid()}`;
}

const ID_SHAPE = /^[a-z]{2,5}_[0-9A-Za-z]{1,64}$/;

/** True when `value` could be one of our ids with that prefix; used to answer 404 early for junk. */
export function looksLikeId(value: string, prefix?: IdPrefix): boolean {
  if (!ID_SHAPE.test(value)) return false;
  return prefix ? value.startsWith(`${prefix}_`) : true;
}

/**
 * A dispute's id, drawn from the config and the processor's dispute id: every notification about one
 * dispute, whichever comes first and however often, names the same `dp_…` and so the same workflow.
 */
export function disputeIdOf(providerConfigId: string, processorDisputeId: string): string {
  const digest = createHash('sha256').update(`${providerConfigId}\n${processorDisputeId}`).digest('base64url').replace(/[-_]/g, '');
  return `dp_${digest.slice(0, 26)}`;
}
