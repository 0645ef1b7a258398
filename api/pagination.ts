import type { ListStart } from '../db/page';
import { ApiError } from './errors';

/**
 * 422 `invalid_pagination`: each parameter is well-formed (the schema passed it), but together or for
 * this account they name no place in the list.
 */
export function paginationError(path: string, message: string): ApiError {
  return new ApiError('invalid_pagination', `${path}: ${message}`, { fields: [{ path, message }] });
}

/** Where a keyset list starts: one cursor at most, and a cursor leaves no page number to go to. */
export function listStart(query: { page?: number; starting_after?: string; ending_before?: string }): ListStart {
  const { page, starting_after: after, ending_before: before } = query;
  if (after !== undefined && before !== undefined) throw paginationError('query/ending_before', 'give starting_after or ending_before, not both');
  if ((after ?? before) !== undefined && page !== undefined) throw paginationError('query/page', 'not with starting_after or ending_before');
  if (after !== undefined) return { startingAfter: after };
  if (before !== undefined) return { endingBefore: before };
  return { page: page ?? 1 };
}
