/**
 * The rules production holds its secrets to, apart from the parsing in lib/config.ts: these are the
 * checks a mistake in them would let a weak or shared key into a deployment. Pure; answers problems as
 * lines that name variables, never a value.
 */
import { isPlaceholder, secretProblem } from './secrets';
import { vaultKeyEntries } from './vault-keys';

/** The secrets a process was given (or generated), as lib/config.ts has read them. */
export interface GivenSecrets {
  jwt: { secret?: string; publicKey?: string; jwksUrl?: string; issuer?: string; audience?: string };
  vaultKeys: string | undefined;
  apiKeyPepper: string | undefined;
}

/**
 * Production needs every secret set; then refuses secrets that are .env.example placeholders, weak
 * (lib/secrets.ts `secretProblem`), or equal to one another; and a system actor key equal to the users'
 * one. The missing ones are reported alone: the other checks read what is set.
 */
export function productionSecretProblems(env: NodeJS.ProcessEnv, { jwt, vaultKeys, apiKeyPepper }: GivenSecrets): string[] {
  const missing = [
    !jwt.secret && !jwt.publicKey && !jwt.jwksUrl && 'JWT_SECRET / JWT_PUBLIC_KEY / JWKS_URL',
    !vaultKeys && 'VAULT_KEYS (or VAULT_KEY)',
    !apiKeyPepper && 'API_KEY_PEPPER',
    !env.METRICS_TOKEN && 'METRICS_TOKEN',
    // A key that is not ours alone (an identity provider's) also signs tokens meant for other services.
    (jwt.publicKey || jwt.jwksUrl) && !jwt.issuer && 'JWT_ISSUER',
    (jwt.publicKey || jwt.jwksUrl) && !jwt.audience && 'JWT_AUDIENCE',
  ].filter(Boolean);
  return missing.length ? [`NODE_ENV=production needs ${missing.join(', ')}`] : weakSecretProblems(env);
}

/** One message per offending variable: placeholders, weak secrets, secrets shared between uses. */
function weakSecretProblems(env: NodeJS.ProcessEnv): string[] {
  const problems: string[] = [];
  const set = (name: string) => (env[name] ? name : undefined);
  const secrets = ['JWT_SECRET', 'SYSTEM_JWT_SECRET', 'VAULT_KEY', 'API_KEY_PEPPER', 'METRICS_TOKEN'].filter(set);
  for (const name of secrets) {
    const problem = secretProblem(name, env[name]!, name === 'VAULT_KEY' ? 'key32' : 'string');
    if (problem) problems.push(problem);
  }
  secrets.forEach((a, i) => secrets.slice(i + 1).forEach((b) => {
    if (env[a] === env[b]) problems.push(`${a} and ${b} must differ`);
  }));
  if (env.SYSTEM_JWT_PUBLIC_KEY && env.SYSTEM_JWT_PUBLIC_KEY.trim() === env.JWT_PUBLIC_KEY?.trim()) {
    problems.push('SYSTEM_JWT_PUBLIC_KEY and JWT_PUBLIC_KEY must differ');
  }
  const databasePassword = (() => {
    try {
      return env.DATABASE_URL ? decodeURIComponent(new URL(env.DATABASE_URL).password) : '';
    } catch {
      return '';
    }
  })();
  problems.push(...vaultKeysProblems(env));
  if (isPlaceholder(databasePassword)) problems.push('DATABASE_URL carries the .env.example placeholder password (POSTGRES_PASSWORD)');
  return problems;
}

/** Each VAULT_KEYS key is held to VAULT_KEY's rules, and differs from the other secrets and keys. */
function vaultKeysProblems(env: NodeJS.ProcessEnv): string[] {
  if (!env.VAULT_KEYS) return [];
  const entries = vaultKeyEntries(env.VAULT_KEYS);
  const others = ['JWT_SECRET', 'SYSTEM_JWT_SECRET', 'API_KEY_PEPPER', 'METRICS_TOKEN'].filter((name) => env[name]);
  return entries.flatMap(({ id, key }, i) => [
    secretProblem(`VAULT_KEYS key "${id}"`, key, 'key32'),
    ...others.filter((name) => env[name] === key).map((name) => `VAULT_KEYS key "${id}" and ${name} must differ`),
    ...entries.slice(i + 1).filter((e) => e.key === key).map((e) => `VAULT_KEYS keys "${id}" and "${e.id}" must differ`),
  ]).filter((p): p is string => !!p);
}
