import jwt from 'jsonwebtoken';
import type { Config } from './config';

/** A development token for a user (or the system actor), signed with JWT_SECRET. */
export function signDevToken(config: Config, claims: { user: string; workspace: string; system?: boolean; ttlSeconds?: number }): string {
  if (!config.jwt.secret) throw new Error('signing tokens needs JWT_SECRET (this server verifies with a public key or JWKS)');
  return jwt.sign(
    { sub: claims.user, workspace_id: claims.workspace, actor_type: claims.system ? 'system' : 'user' },
    config.jwt.secret,
    {
      algorithm: 'HS256',
      expiresIn: claims.ttlSeconds ?? 3600,
      ...(config.jwt.issuer ? { issuer: config.jwt.issuer } : {}),
      ...(config.jwt.audience ? { audience: config.jwt.audience } : {}),
    },
  );
}
