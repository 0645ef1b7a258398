import type { LRUCache } from 'lru-cache';
import type { Db } from '../../db/knex';
import type { Environment } from '../../db/environments';
import { ApiError } from '../errors';
import type { Principal } from './authenticate';
import { ALL_PERMISSIONS, Permission, Role, ROLE_PERMISSIONS } from './permissions';

export interface AccountRow {
  id: string;
  user_id: string;
  workspace_id: string;
  name: string;
  environment: Environment;
  prod_account_id: string | null;
  deleted: boolean;
}

/** What a request may do on one account: the account, its environment and the caller's permissions. */
export interface AccountScope {
  account: AccountRow;
  environment: Environment;
  permissions: ReadonlySet<string>;
  role?: Role;
}

const SYSTEM_PERMISSIONS: ReadonlySet<string> = new Set(ALL_PERMISSIONS);

/**
 * Resolves and checks the account a request acts on. `forAccount` is for an account the caller names
 * (query `account_id`): no access is 403. `forResource` is for the owner of a resource found by id: no
 * access is 404, so that ids of other tenants are never confirmed.
 */
export class Access {
  constructor(
    private readonly db: Db,
    readonly principal: Principal,
    private readonly permission: Permission | null,
    /** Account rows by id, for a few seconds: they hardly change and every request needs one. */
    private readonly accounts?: LRUCache<string, AccountRow>,
  ) {}

  async forAccount(accountId: string | undefined): Promise<AccountScope> {
    const p = this.principal;
    if (p.kind === 'api_key' && accountId && accountId !== p.accountId) throw new ApiError('account_access_denied');
    if (p.kind === 'user' && !accountId) {
      throw ApiError.validation([{ path: 'query/account_id', message: 'is required when authenticating with a token' }]);
    }
    const scope = await this.load(accountId ?? (p as { accountId: string }).accountId);
    if (!scope) throw new ApiError('account_access_denied');
    return this.check(scope);
  }

  async forResource(accountId: string, what = 'resource'): Promise<AccountScope> {
    const p = this.principal;
    if (p.kind === 'api_key' && accountId !== p.accountId) throw ApiError.notFound(what);
    const scope = await this.load(accountId);
    if (!scope) throw ApiError.notFound(what);
    return this.check(scope);
  }

  /**
   * The coarse check made before a request may touch shared state such as the idempotency store: does
   * this credential hold the route's permission at all? An API key: in its own set (and only on its own
   * account); a user: on the account named, else on any account they are a member of; the system actor:
   * always. The handler's `forAccount/forResource` then checks the account the request really acts on.
   */
  async admit(accountId: string | undefined): Promise<void> {
    const p = this.principal;
    if (p.kind === 'api_key') {
      if (accountId && accountId !== p.accountId) throw new ApiError('account_access_denied');
      this.check({ permissions: p.permissions });
      return;
    }
    if (!this.permission || p.actorType === 'system') return;
    if (accountId) {
      const scope = await this.load(accountId);
      if (!scope) throw new ApiError('account_access_denied');
      this.check(scope);
      return;
    }
    const roles = (await this.db('core.account_memberships as m')
      .join('core.accounts as a', 'a.id', 'm.account_id')
      .where({ 'm.user_id': p.userId, 'a.deleted': false })
      .distinct('m.role')
      .pluck('m.role')) as Role[];
    this.check({ permissions: new Set(roles.flatMap((role) => [...ROLE_PERMISSIONS[role]])) });
  }

  /** Every account this principal can see (for listings), production and sandbox. */
  async visibleAccountIds(): Promise<string[]> {
    const p = this.principal;
    if (p.kind === 'api_key') return [p.accountId];
    if (p.actorType === 'system') {
      return (await this.db('core.accounts').where({ workspace_id: p.workspaceId, deleted: false }).pluck('id')) as string[];
    }
    return (await this.db('core.account_memberships as m')
      .join('core.accounts as a', 'a.id', 'm.account_id')
      .where({ 'm.user_id': p.userId, 'a.deleted': false })
      .pluck('a.id')) as string[];
  }

  private check<S extends Pick<AccountScope, 'permissions'>>(scope: S): S {
    if (this.permission && !scope.permissions.has(this.permission)) {
      throw new ApiError('insufficient_permissions', `This needs the ${this.permission} permission.`, { required: this.permission });
    }
    return scope;
  }

  private async load(accountId: string): Promise<AccountScope | undefined> {
    const p = this.principal;
    let account = this.accounts?.get(accountId);
    if (!account) {
      account = (await this.db('core.accounts').where({ id: accountId, deleted: false }).first()) as AccountRow | undefined;
      if (!account) return undefined;
      this.accounts?.set(accountId, account);
    }
    if (p.kind === 'api_key') {
      return { account, environment: account.environment, permissions: p.permissions };
    }
    if (p.actorType === 'system') {
      return { account, environment: account.environment, permissions: SYSTEM_PERMISSIONS };
    }
    const membership = await this.db('core.account_memberships').where({ account_id: accountId, user_id: p.userId }).first('role');
    if (!membership) return undefined;
    const role = membership.role as Role;
    return { account, environment: account.environment, permissions: ROLE_PERMISSIONS[role], role };
  }
}
