import { hash } from 'node:crypto';
import jwt, { JwtPayload } from 'jsonwebtoken';
import { JwksClient } from 'jwks-rsa';
import { LRUCache } from 'lru-cache';
import type { Config } from '../../lib/config';
import { hashApiKey } from '../../lib/secrets';
import { ensureWorkspace } from '../../db/accounts';
import { findApiKeyByHash, touchApiKey } from '../../db/api-keys';
import type { Db } from '../../db/knex';
import type { Environment } from '../../db/environments';
import { ensureUser } from '../../db/memberships';
import { ApiError } from '../errors';
import { fromPermissionMap, PermissionMap } from './permissions';

export interface UserPrincipal {
  kind: 'user';
  actorType: 'user' | 'system';
  userId: string;
  /** The workspace the token names; empty for a platform token. */
  workspaceId: string;
  /**
   * A system token whose claims name no workspace: the platform's own, which registers payment providers
   * (shared by every workspace) and acts on no workspace's accounts (none has an empty id).
   */
  platform?: true;
}

export interface ApiKeyPrincipal {
  kind: 'api_key';
  keyId: string;
  keyType: 'SECRET' | 'PUBLISHABLE';
  accountId: string;
  workspaceId: string;
  environment: Environment;
  permissions: ReadonlySet<string>;
}

export type Principal = UserPrincipal | ApiKeyPrincipal;

export type CredentialKind = 'secret_key' | 'publishable_key' | 'jwt';

/** A secret key contains `sk_` within its first 32 characters, a publishable one `pk_`. */
export function classifyBearer(token: string): CredentialKind {
  const head = token.slice(0, 32);
  if (head.includes('sk_')) return 'secret_key';
  if (head.includes('pk_')) return 'publishable_key';
  return 'jwt';
}

export function bearerToken(header: string | undefined): string {
  if (!header) throw new ApiError('missing_authorization');
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match) throw new ApiError('invalid_token', 'The Authorization header must be "Bearer <token>".');
  return match[1];
}

export interface Authenticator {
  authenticate(header: string | undefined, ip: string): Promise<Principal>;
  /** Forgets cached key lookups: called when a key is deleted or rotated, so it stops working at once. */
  invalidate(): void;
}

/**
 * How long a verified API key is trusted without asking Postgres again. Deletion and rotation clear the
 * cache of the process that performs them at once; other API processes see them within this time.
 */
const KEY_CACHE_TTL_MS = 5_000;

export function createAuthenticator(db: Db, config: Config): Authenticator {
  const jwks = config.jwt.jwksUrl ? new JwksClient({ jwksUri: config.jwt.jwksUrl, cache: true, rateLimit: true }) : undefined;
  const provisioned = new Set<string>();
  const keyCache = new LRUCache<string, { principal: ApiKeyPrincipal; expiresAt: number | null }>({ max: 10_000, ttl: KEY_CACHE_TTL_MS });

  /**
   * Two separate sets of keys. A user token is verified only with the users' keys (JWT_SECRET,
   * JWT_PUBLIC_KEY, JWKS_URL); a token claiming `actor_type: "system"` only with the system actor's
   * (SYSTEM_JWT_SECRET, SYSTEM_JWT_PUBLIC_KEY). Whoever can sign user tokens (an auth provider, a leaked
   * JWT_SECRET) therefore cannot mint a system token, and the system key makes no user tokens.
   */
  const userKeys = {
    algorithms: [
      ...(config.jwt.secret ? (['HS256'] as const) : []),
      ...(config.jwt.publicKey || jwks ? (['RS256', 'ES256'] as const) : []),
    ] as jwt.Algorithm[],
    keyFor: ((header, callback) => {
      if (config.jwt.secret && header.alg === 'HS256') return callback(null, config.jwt.secret);
      if (config.jwt.publicKey) return callback(null, config.jwt.publicKey);
      if (jwks) {
        jwks.getSigningKey(header.kid).then((k) => callback(null, k.getPublicKey()), (e) => callback(e));
        return;
      }
      callback(new Error('no key for this token'));
    }) as jwt.GetPublicKeyOrSecret,
  };
  const systemKeys = {
    algorithms: [
      ...(config.jwt.systemSecret ? (['HS256'] as const) : []),
      ...(config.jwt.systemPublicKey ? (['RS256', 'ES256'] as const) : []),
    ] as jwt.Algorithm[],
    keyFor: ((header, callback) => {
      if (config.jwt.systemSecret && header.alg === 'HS256') return callback(null, config.jwt.systemSecret);
      if (config.jwt.systemPublicKey) return callback(null, config.jwt.systemPublicKey);
      callback(new Error('no key for this token'));
    }) as jwt.GetPublicKeyOrSecret,
  };

  async function verifyJwt(token: string): Promise<UserPrincipal> {
    // The claimed actor picks the keys; the verified claims must then say the same.
    const claimed = (jwt.decode(token, { json: true }) ?? {}).actor_type ?? 'user';
    if (claimed !== 'user' && claimed !== 'system') throw new ApiError('invalid_token', 'actor_type must be user or system.');
    const keys = claimed === 'system' ? systemKeys : userKeys;
    if (!keys.algorithms.length) throw new ApiError('invalid_token');
    const claims = await new Promise<JwtPayload>((resolve, reject) => {
      jwt.verify(
        token,
        keys.keyFor,
        { algorithms: keys.algorithms, issuer: config.jwt.issuer, audience: config.jwt.audience, complete: false },
        (err, decoded) => (err ? reject(err) : resolve(decoded as JwtPayload)),
      );
    }).catch((err: Error) => {
      throw err.name === 'TokenExpiredError' ? new ApiError('token_expired') : new ApiError('invalid_token');
    });
    const { sub, workspace_id: workspaceId, actor_type: actorType = 'user', exp } = claims as JwtPayload & Record<string, unknown>;
    if (actorType !== claimed) throw new ApiError('invalid_token');
    if (claimed === 'system' && workspaceId === undefined && typeof sub === 'string' && sub && typeof exp === 'number') {
      return { kind: 'user', actorType: 'system', userId: sub, workspaceId: '', platform: true };
    }
    if (typeof sub !== 'string' || !sub || typeof workspaceId !== 'string' || !workspaceId || typeof exp !== 'number') {
      throw new ApiError('invalid_token', 'The token lacks sub, workspace_id or exp.');
    }
    await provision(sub, workspaceId);
    return { kind: 'user', actorType: claimed, userId: sub, workspaceId };
  }

  /** Users and workspaces come into being the first time a valid token names them. */
  async function provision(userId: string, workspaceId: string): Promise<void> {
    const id = `${userId}@${workspaceId}`;
    if (provisioned.has(id)) return;
    await ensureWorkspace(db, workspaceId);
    await ensureUser(db, userId);
    provisioned.add(id);
  }

  async function verifyApiKey(token: string, kind: 'secret_key' | 'publishable_key', ip: string): Promise<ApiKeyPrincipal> {
    // The cache is keyed by a one-shot SHA-256 of the pepper and the key (about a twentieth of an HMAC's
    // cost, and no plaintext key kept in memory); the HMAC the table is searched by is made on a miss only.
    const cacheKey = hash('sha256', `${config.apiKeyPepper}\u0000${token}`);
    const cached = keyCache.get(cacheKey);
    if (cached && (cached.expiresAt === null || cached.expiresAt > Date.now())) {
      if ((cached.principal.keyType === 'SECRET') !== (kind === 'secret_key')) throw new ApiError('invalid_api_key');
      return cached.principal;
    }
    const row = await findApiKeyByHash(db, hashApiKey(token, config.apiKeyPepper));
    const expired = row?.expires_at && new Date(row.expires_at).getTime() <= Date.now();
    if (!row || row.deleted || row.account_deleted || row.status !== 'ACTIVE' || expired) throw new ApiError('invalid_api_key');
    if ((row.type === 'SECRET') !== (kind === 'secret_key')) throw new ApiError('invalid_api_key');
    // last_used_at is kept to the minute: a write per request would cost more than it tells.
    if (!row.last_used_at || Date.now() - new Date(row.last_used_at).getTime() > 60_000) {
      touchApiKey(db, row.id, ip).catch(() => {});
    }
    const principal: ApiKeyPrincipal = {
      kind: 'api_key',
      keyId: row.id,
      keyType: row.type,
      accountId: row.account_id,
      workspaceId: row.workspace_id,
      environment: row.environment,
      permissions: fromPermissionMap(row.permissions as PermissionMap),
    };
    keyCache.set(cacheKey, { principal, expiresAt: row.expires_at ? new Date(row.expires_at).getTime() : null });
    return principal;
  }

  return {
    async authenticate(header, ip) {
      const token = bearerToken(header);
      const kind = classifyBearer(token);
      return kind === 'jwt' ? verifyJwt(token) : verifyApiKey(token, kind, ip);
    },
    invalidate() {
      keyCache.clear();
    },
  };
}
