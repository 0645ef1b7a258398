import { Type } from '@sinclair/typebox';
import { createAccount, findLiveAccount, listAccounts, putAccountSetting, settingsByAccount } from '../../db/accounts';
import { HOST_ENTRY_PATTERN, hostEntryProblem, MAX_RETURN_URL_HOSTS, RETURN_URL_HOSTS } from '../../lib/return-url-hosts';
import { roleOn } from '../../db/memberships';
import { ApiError } from '../errors';
import { AccountSchema, AccountSettingSchema, serializeAccount, serializeAccountSetting } from '../../resources/accounts';
import { serializeApiKey } from '../../resources/api-keys';
import { defineRoute } from '../route';
import { Country, Currency, Id, Metadata, Obj } from '../../resources/schemas';
import { ALL_PERMISSIONS, toPermissionMap } from '../auth/permissions';
import type { UserPrincipal } from '../auth/authenticate';

const TimeZone = Type.String({ minLength: 1, maxLength: 64, description: 'IANA zone name, e.g. Europe/Berlin' });

function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

export const accountRoutes = [
  defineRoute({
    method: 'post',
    path: '/accounts',
    tag: 'Accounts',
    summary: 'Create a production account, or a sandbox account linked to one',
    permission: null,
    errors: ['prod_account_id_required', 'account_access_denied'],
    userOnly: true,
    status: 201,
    message: 'Account created',
    query: Obj({
      sandbox_mode: Type.Optional(Type.Boolean()),
      prod_account_id: Type.Optional(Id('acct')),
    }),
    body: Obj({
      name: Type.String({ minLength: 1, maxLength: 200 }),
      country: Type.Optional(Country),
      currency: Type.Optional(Currency),
      timezone: Type.Optional(TimeZone),
      metadata: Type.Optional(Metadata),
    }),
    response: AccountSchema,
    async handler({ query, body, principal, deps }) {
      const user = principal as UserPrincipal;
      if (body.timezone && !isTimeZone(body.timezone)) {
        throw ApiError.validation([{ path: 'body/timezone', message: 'is not a known time zone' }]);
      }
      let workspaceId = user.workspaceId;
      if (query.sandbox_mode) {
        if (!query.prod_account_id) throw new ApiError('prod_account_id_required');
        const prod = await findLiveAccount(deps.db, query.prod_account_id);
        const role = prod && await roleOn(deps.db, prod.id, user.userId);
        const owns = user.actorType === 'system' ? prod?.workspace_id === user.workspaceId : role !== undefined && ['OWNER', 'ADMIN'].includes(role);
        if (!prod || !owns) throw new ApiError('account_access_denied', 'prod_account_id names no production account of yours.');
        if (prod.environment !== 'production') {
          throw ApiError.validation([{ path: 'query/prod_account_id', message: 'must name a production account' }]);
        }
        workspaceId = prod.workspace_id;
      } else if (query.prod_account_id) {
        throw ApiError.validation([{ path: 'query/prod_account_id', message: 'is only for sandbox accounts (sandbox_mode=true)' }]);
      }
      const { account, keys } = await createAccount(deps.db, deps.config.apiKeyPepper, {
        userId: user.userId,
        workspaceId,
        name: body.name,
        country: body.country,
        currency: body.currency,
        timezone: body.timezone,
        environment: query.sandbox_mode ? 'sandbox' : 'production',
        prodAccountId: query.sandbox_mode ? query.prod_account_id : undefined,
        metadata: body.metadata,
        managedKeyPermissions: toPermissionMap(ALL_PERMISSIONS),
      });
      return { data: { ...serializeAccount(account), api_keys: keys.map((k) => serializeApiKey(k.row, k.plaintext)) } };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/accounts',
    tag: 'Accounts',
    summary: 'List every account the caller may access, production and sandbox',
    permission: null,
    message: 'Accounts retrieved',
    response: Type.Array(AccountSchema),
    async handler({ access, deps }) {
      const ids = await access.visibleAccountIds();
      const rows = await listAccounts(deps.db, ids);
      const settings = await settingsByAccount(deps.db, ids);
      return { data: rows.map((r) => serializeAccount(r, settings.get(r.id))) };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/accounts/:id',
    tag: 'Accounts',
    summary: 'Get one account',
    permission: 'account:read',
    message: 'Account retrieved',
    params: Obj({ id: Type.String({ minLength: 1, maxLength: 100 }) }),
    response: AccountSchema,
    async handler({ params, access, deps }) {
      const { account } = await access.forResource(params.id, 'account');
      const settings = await settingsByAccount(deps.db, [account.id]);
      return { data: serializeAccount(account, settings.get(account.id)) };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/accounts/:id/permissions',
    tag: 'Accounts',
    summary: 'The caller\'s own permissions on the account: what a dashboard may offer it (a button it would be refused is not shown)',
    permission: 'account:read',
    message: 'Permissions retrieved',
    params: Obj({ id: Type.String({ minLength: 1, maxLength: 100 }) }),
    response: Obj({ permissions: Type.Array(Type.String()) }),
    async handler({ params, access }) {
      const scope = await access.forResource(params.id, 'account');
      return { data: { permissions: [...scope.permissions].sort() } };
    },
  }),

  defineRoute({
    method: 'put',
    path: '/accounts/:id/settings/return_url_hosts',
    tag: 'Accounts',
    summary: 'Set the hosts a payment\'s return_url may name (docs/authentication.md); an empty list allows any https host',
    // OWNER and ADMIN only: a DEVELOPER must not be able to lift a restriction an owner set.
    permission: 'account:settings:write',
    message: 'Account setting saved',
    params: Obj({ id: Type.String({ minLength: 1, maxLength: 100 }) }),
    body: Obj({
      hosts: Type.Array(Type.String({ minLength: 1, maxLength: 253, pattern: HOST_ENTRY_PATTERN }), {
        maxItems: MAX_RETURN_URL_HOSTS, uniqueItems: true,
        description: 'host names, exact (shop.example.com) or every subdomain of one (*.example.com); create and confirm refuse a return_url on any other host',
      }),
    }),
    response: AccountSettingSchema,
    async handler({ params, body, access, deps }) {
      const { account } = await access.forResource(params.id, 'account');
      const problems = body.hosts.flatMap((host, i) => {
        const message = hostEntryProblem(host);
        return message ? [{ path: `body/hosts/${i}`, message }] : [];
      });
      if (problems.length) throw ApiError.validation(problems);
      return { data: serializeAccountSetting(await putAccountSetting(deps.db, account.id, RETURN_URL_HOSTS, JSON.stringify(body.hosts))) };
    },
  }),
];
