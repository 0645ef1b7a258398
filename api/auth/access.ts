import type { LRUCache } from 'lru-cache';
import { AccountRow, findLiveAccount, liveAccountIdsOfWorkspace } from '../../db/accounts';
import type { Db } from '../../db/knex';
import type { Environment } from '../../db/environments';
import { liveAccountIdsOfUser, roleOn } from '../../db/memberships';
import { ApiError } from '../errors';
import type { Principal } from './authenticate';
import { ALL_PERMISSIONS, Permission, Role, ROLE_PERMISSIONS } from './permissions';

export type { AccountRow };

/** What a request may do on one account: the account, its environment and the caller's permissions. */
export interface AccountScope {
  account: AccountRow;
  environment: Environment;
  permissions: ReadonlySet<string>;
  role?: Role;
}

const SYSTEM_PERMISSIONS: ReadonlySet<string> = new Set(ALL_PERMISSIONS);

/**
 * Resolves and checks the account a request acts on. The account a request names (query `account_id`,
 * read by the route layer) is given to the constructor and used everywhere here, so handlers never pass
 * it: `forAccount()` acts on it (lists and creates); `forResource(owner)` checks the owner of a resource
 * found by id, and answers 404 when it is not the named account, so ids of other tenants (or of another
 * of the caller's accounts) are never confirmed. Naming an account the credential cannot act for is 403
 * `account_access_denied`, wherever it happens.
 */
export class Access {
  /** Scopes loaded for this request, by account id: each account is loaded and checked once. */
  private readonly scopes = new Map<string, Promise<AccountScope | undefined>>();

  constructor(
    private readonly db: Db,
    readonly principal: Principal,
    private readonly permission: Permission | null,
    /** Account rows by id, for a few seconds: they hardly change and every request needs one. */
    private readonly accounts?: LRUCache<string, AccountRow>,
    /** The account the request names (a well-formed `account_id`), if any. */
    readonly namedAccountId?: string,
  ) {}

  /**
   * The named account, if the caller may act for it (without the route's permission check); 403
   * `account_access_denied` if not. The route layer calls it for every account-scoped request, so the
   * answer does not depend on what the handler finds first.
   */
  async namedAccount(): Promise<AccountScope | undefined> {
    const id = this.namedAccountId;
    if (!id) return undefined;
    const p = this.principal;
    if (p.kind === 'api_key' && id !== p.accountId) throw new ApiError('account_access_denied');
    const scope = await this.scope(id);
    if (!scope) throw new ApiError('account_access_denied');
    return scope;
  }

  /** The account a list or a create acts on: the named one, else an API key's own; a user must name one. */
  async forAccount(): Promise<AccountScope> {
    const p = this.principal;
    const named = await this.namedAccount();
    if (named) return this.check(named);
    if (p.kind === 'user') {
      throw ApiError.validation([{ path: 'query/account_id', message: 'is required when authenticating with a token' }]);
    }
    const scope = await this.scope(p.accountId);
    if (!scope) throw new ApiError('account_access_denied');
    return this.check(scope);
  }

  /** The owner of a resource found by id: 404 if the caller cannot see it or named another account. */
  async forResource(accountId: string, what = 'resource'): Promise<AccountScope> {
    const p = this.principal;
    const named = this.namedAccountId ? await this.namedAccount() : undefined;
    if (named && named.account.id !== accountId) throw ApiError.notFound(what);
    if (p.kind === 'api_key' && accountId !== p.accountId) throw ApiError.notFound(what);
    const scope = named ?? await this.scope(accountId);
    if (!scope) throw ApiError.notFound(what);
    return this.check(scope);
  }

  /**
   * The coarse check made before a request may touch shared state such as the idempotency store: does
   * this credential hold the route's permission at all? An API key: in its own set (and only on its own
   * account); a user: on the account named (required with a key: see below); the system actor:
   * always. The handler's `forAccount/forResource` then checks the account the request really acts on.
   */
  async admit(): Promise<void> {
    const p = this.principal;
    if (p.kind === 'api_key') {
      await this.namedAccount();
      this.check({ permissions: p.permissions });
      return;
    }
    if (!this.permission) return;
    const named = await this.namedAccount();
    if (p.actorType === 'system') return;
    if (named) {
      this.check(named);
      return;
    }
    // Without a named account the key's scope is the user alone, and a role on *any* account (one the
    // user can always make) would let a replay through after the user lost the account it was for.
    throw ApiError.validation([{ path: 'query/account_id', message: 'is required with an Idempotency-Key when authenticating with a token' }]);
  }

  /** Every account this principal can see (for listings), production and sandbox. */
  async visibleAccountIds(): Promise<string[]> {
    const p = this.principal;
    if (p.kind === 'api_key') return [p.accountId];
    if (p.actorType === 'system') return liveAccountIdsOfWorkspace(this.db, p.workspaceId);
    return liveAccountIdsOfUser(this.db, p.userId);
  }

  /**
   * Checks that the caller also holds `permission` on the account `scope` stands for, beyond the route's
   * own: a read that embeds another kind of resource needs that resource's read permission too, or it
   * would hand it out to credentials that may not read it. 403 `insufficient_permissions` naming it.
   */
  require(scope: Pick<AccountScope, 'permissions'>, permission: Permission, what = 'This'): void {
    if (!scope.permissions.has(permission)) {
      throw new ApiError('insufficient_permissions', `${what} needs the ${permission} permission.`, { required: permission });
    }
  }

  private check<S extends Pick<AccountScope, 'permissions'>>(scope: S): S {
    if (this.permission) this.require(scope, this.permission);
    return scope;
  }

  private scope(accountId: string): Promise<AccountScope | undefined> {
    let scope = this.scopes.get(accountId);
    if (!scope) {
      scope = this.load(accountId);
      this.scopes.set(accountId, scope);
    }
    return scope;
  }

  private async load(accountId: string): Promise<AccountScope | undefined> {
    const p = this.principal;
    let account = this.accounts?.get(accountId);
    if (!account) {
      account = await findLiveAccount(this.db, accountId);
      if (!account) return undefined;
      this.accounts?.set(accountId, account);
    }
    if (p.kind === 'api_key') {
      return { account, environment: account.environment, permissions: p.permissions };
    }
    if (p.actorType === 'system') {
      // The platform operator acts on every account of its own workspace, and on no other workspace's.
      if (account.workspace_id !== p.workspaceId) return undefined;
      return { account, environment: account.environment, permissions: SYSTEM_PERMISSIONS };
    }
    const role = await roleOn(this.db, accountId, p.userId);
    if (!role) return undefined;
    return { account, environment: account.environment, permissions: ROLE_PERMISSIONS[role], role };
  }
}
