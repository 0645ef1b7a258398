import { ulid } from 'ulid';

/**
 * Ids minted inside a workflow: ULIDs from the workflow's deterministic clock and seeded Math.random, so
 * a replay mints the same ids and activity retries reuse them.
 */
export function workflowId(prefix: 'ch' | 'rp' | 'pm' | 'evt' | 'cus'): string {
  return `${prefix}_${ulid(Date.now(), Math.random)}`;
}
