import { ApiError } from '../errors';

/**
 * Permissions are `<scope>:<action>`. An api_key stores them as { scope: [actions] }.
 */
export const PERMISSION_CATALOGUE = {
  'account': ['read'],
  'account:settings': ['write'],
  'account:api:key': ['create', 'read', 'update', 'delete'],
  'account:membership': ['create', 'read', 'delete'],
  'customer': ['read', 'write'],
  'payment': ['read', 'create', 'confirm', 'capture', 'cancel'],
  'refund': ['read', 'create'],
  'checkout': ['read', 'write'],
  'billing': ['read', 'write'],
  'dispute': ['read', 'write'],
  'routing': ['read', 'write'],
  'webhook': ['read', 'write'],
  'notification': ['read', 'write'],
  'event': ['read'],
  'provider:credentials': ['write'],
  'audit': ['read'],
} as const;

type Catalogue = typeof PERMISSION_CATALOGUE;
export type Permission = { [S in keyof Catalogue]: `${S}:${Catalogue[S][number]}` }[keyof Catalogue];
export type PermissionMap = Record<string, string[]>;

export const ALL_PERMISSIONS: Permission[] = Object.entries(PERMISSION_CATALOGUE).flatMap(([scope, actions]) =>
  actions.map((a) => `${scope}:${a}` as Permission),
);

export function toPermissionMap(perms: Iterable<string>): PermissionMap {
  const map: PermissionMap = {};
  for (const p of perms) {
    const i = p.lastIndexOf(':');
    (map[p.slice(0, i)] ??= []).push(p.slice(i + 1));
  }
  return map;
}

export function fromPermissionMap(map: PermissionMap): Set<string> {
  return new Set(Object.entries(map).flatMap(([scope, actions]) => actions.map((a) => `${scope}:${a}`)));
}

/** Entries of a permission map that are not in the catalogue, as `scope:action` strings. */
export function unknownPermissions(map: PermissionMap): string[] {
  const known = new Set<string>(ALL_PERMISSIONS);
  return [...fromPermissionMap(map)].filter((p) => !known.has(p));
}

/**
 * The permissions of `granted` that `holder` lacks; empty when `holder` may hand them on. A credential
 * is issued (a key created, or a key's new value produced by regeneration) only when this is empty, so
 * nobody obtains a credential that can do more than they can.
 */
export function ungrantable(holder: ReadonlySet<string>, granted: Iterable<string>): string[] {
  return [...new Set(granted)].filter((p) => !holder.has(p));
}

/**
 * Refuses to issue a credential holding `granted` to a caller holding `holder`, unless the caller holds
 * every one of those permissions itself: 403 `insufficient_permissions` naming what it lacks. Creating and
 * regenerating a key, and giving a user a role, all go through here.
 */
export function assertMayGrant(holder: ReadonlySet<string>, granted: Iterable<string>, message: string): void {
  const beyond = ungrantable(holder, granted);
  if (beyond.length) throw new ApiError('insufficient_permissions', `${message}: ${beyond.join(', ')}.`, { required: beyond });
}

export type Role = 'OWNER' | 'ADMIN' | 'DEVELOPER' | 'VIEWER';
/** Highest first: a user may give a role no higher than its own. */
export const ROLES: Role[] = ['OWNER', 'ADMIN', 'DEVELOPER', 'VIEWER'];

/**
 * Held by OWNER and ADMIN only: who changes where live money settles, where customers are sent back to
 * (the return_url hosts), and who reads the audit trail.
 */
const ADMIN_ONLY = new Set<Permission>(['provider:credentials:write', 'account:settings:write', 'audit:read']);
const READS = ALL_PERMISSIONS.filter((p) => p.endsWith(':read') && !ADMIN_ONLY.has(p));
const DEVELOPER_EXCLUDED = new Set<Permission>([
  'account:membership:create', 'account:membership:delete', 'account:api:key:delete', ...ADMIN_ONLY,
]);

export const ROLE_PERMISSIONS: Record<Role, ReadonlySet<string>> = {
  OWNER: new Set(ALL_PERMISSIONS),
  ADMIN: new Set(ALL_PERMISSIONS),
  DEVELOPER: new Set(ALL_PERMISSIONS.filter((p) => !DEVELOPER_EXCLUDED.has(p))),
  VIEWER: new Set(READS),
};

/**
 * Refuses a role the granting user ranks below (an ADMIN cannot make an OWNER, though both hold every
 * permission: only owners count as the account's last line, see removeMembership), and any role with a
 * permission the grantor — user or key — lacks.
 */
export function assertMayGrantRole(grantor: { permissions: ReadonlySet<string>; role?: Role }, role: Role): void {
  assertMayGrant(grantor.permissions, ROLE_PERMISSIONS[role], `The ${role} role has permissions the caller lacks`);
  if (grantor.role && ROLES.indexOf(role) < ROLES.indexOf(grantor.role)) {
    throw new ApiError('insufficient_permissions', `The ${role} role ranks above the caller's own (${grantor.role}).`, { required: `role:${role}` });
  }
}
