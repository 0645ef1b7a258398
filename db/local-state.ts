/**
 * Development state on this machine's disk: where the repository and the data directory (`.data`,
 * `SB_DATA_DIR`) are, and the secrets development generates once into `.data/secrets.json`. Beside
 * db/embedded.ts (the embedded Postgres in the same directory).
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { type Config, configMode, type DevSecrets, parseConfig } from '../lib/config';
import { randomSecret } from '../lib/secrets';

/** The repository root, found from this file whether it runs from source or from dist/. */
export const ROOT_DIR = (() => {
  let dir = __dirname;
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) return process.cwd();
    dir = up;
  }
  return dir;
})();

/** SB_DATA_DIR (relative to the repository root), else `.data`. */
export function dataDirFrom(env: NodeJS.ProcessEnv): string {
  return resolve(ROOT_DIR, env.SB_DATA_DIR ?? '.data');
}

/**
 * Development secrets are generated once into .data/secrets.json so that restarts keep working keys,
 * sessions and encrypted data. Production never gets them: it must be configured explicitly. A secret
 * the file lacks is generated and added; the others are kept.
 */
export function readOrCreateDevSecrets(dataDir: string): DevSecrets {
  const file = join(dataDir, 'secrets.json');
  const stored: Partial<DevSecrets> = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : {};
  const secrets: DevSecrets = {
    jwtSecret: stored.jwtSecret ?? randomSecret(32),
    vaultKey: stored.vaultKey ?? randomSecret(32),
    apiKeyPepper: stored.apiKeyPepper ?? randomSecret(32),
    systemJwtSecret: stored.systemJwtSecret ?? randomSecret(32),
  };
  if (Object.keys(secrets).some((k) => stored[k as keyof DevSecrets] === undefined)) {
    mkdirSync(dataDir, { recursive: true });
    const temporary = `${file}.${process.pid}.tmp`;
    writeFileSync(temporary, JSON.stringify({ ...stored, ...secrets }, null, 2), { mode: 0o600 });
    renameSync(temporary, file);
  }
  return secrets;
}

/** What every process calls: the configuration from `env`, with development's generated secrets when not in production. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const dataDir = dataDirFrom(env);
  const devSecrets = configMode(env.NODE_ENV) === 'production' ? undefined : readOrCreateDevSecrets(dataDir);
  return parseConfig(env, { dataDir, devSecrets });
}
