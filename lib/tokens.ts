import jwt from 'jsonwebtoken';
import type { Config } from './config';

/**
 * A development token (HS256): a user's signed with JWT_SECRET, the system actor's with
 * SYSTEM_JWT_SECRET (the API accepts a system token from that key only, and a user token never from it).
 * A system token naming no workspace is platform-scoped.
 */
export function signDevToken(config: Config, claims: { user: string; workspace?: string; system?: boolean; ttlSeconds?: number }): string {
  const [key, variable] = claims.system ? [config.jwt.systemSecret, 'SYSTEM_JWT_SECRET'] : [config.jwt.secret, 'JWT_SECRET'];
  if (!key) throw new Error(`signing ${claims.system ? 'a system' : 'a user'} token needs ${variable} (this server verifies those with a public key${claims.system ? '' : ' or JWKS'})`);
  // A system token without a workspace is the platform's (it registers payment providers); a user always has one.
  if (!claims.workspace && !claims.system) throw new Error('a user token names a workspace');
  return jwt.sign(
    { sub: claims.user, ...(claims.workspace ? { workspace_id: claims.workspace } : {}), actor_type: claims.system ? 'system' : 'user' },
    key,
    {
      algorithm: 'HS256',
      expiresIn: claims.ttlSeconds ?? 3600,
      ...(config.jwt.issuer ? { issuer: config.jwt.issuer } : {}),
      ...(config.jwt.audience ? { audience: config.jwt.audience } : {}),
    },
  );
}
