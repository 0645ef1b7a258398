import { monotonicFactory } from 'ulid';

// Monotonic: ids minted in the same millisecond still sort in the order they were made, so rows written
// together (the events of one transition) list in that order.
const ulid = monotonicFactory();

/** Type prefixes of every id Switchboard issues. */
export const ID_PREFIXES = [
  'ws', 'usr', 'acct', 'mem', 'key', 'ntf', 'cus', 'addr', 'pm', 'pay', 'ch', 'rp', 'evt', 're', 'pp',
  'ppm', 'ppc', 'fee', 'rule', 'we', 'whd', 'wha', 'set', 'pev',
] as const;
export type IdPrefix = (typeof ID_PREFIXES)[number];

/** A time-sortable opaque id such as `pay_01J…`. */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${ulid()}`;
}

const ID_SHAPE = /^[a-z]{2,4}_[0-9A-Za-z]{1,64}$/;

/** True when `value` could be one of our ids with that prefix; used to answer 404 early for junk. */
export function looksLikeId(value: string, prefix?: IdPrefix): boolean {
  if (!ID_SHAPE.test(value)) return false;
  return prefix ? value.startsWith(`${prefix}_`) : true;
}
