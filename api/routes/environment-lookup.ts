import type { Environment } from '../../db/environments';
import type { Access, AccountScope } from '../auth/access';
import { ApiError } from '../errors';

const ENVIRONMENTS: Environment[] = ['production', 'sandbox'];

/**
 * Finds a resource by id for the caller through its store's finder, or 404. An API key looks only in its
 * own environment; a user token in both (ids are unique across them). Access to the resource's account
 * is then checked as for any resource found by id: no access is 404, never 403, so other tenants' ids
 * stay hidden.
 */
export async function findVisible<T extends { account_id: string }>(
  access: Access,
  what: string,
  find: (env: Environment) => Promise<T | undefined>,
): Promise<{ row: T; env: Environment; scope: AccountScope }> {
  const p = access.principal;
  const envs = p.kind === 'api_key' ? [p.environment] : ENVIRONMENTS;
  for (const env of envs) {
    const row = await find(env);
    if (!row) continue;
    const scope = await access.forResource(row.account_id, what);
    // Rows live in their account's environment; anything else is not this caller's to see.
    if (scope.environment !== env) throw ApiError.notFound(what);
    return { row, env, scope };
  }
  throw ApiError.notFound(what);
}
