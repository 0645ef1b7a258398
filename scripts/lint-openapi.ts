import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildOpenApi } from '../api/openapi';
import { ROUTES } from '../api/routes';
import { ROOT_DIR } from '../db/local-state';

/**
 * `npm run lint:openapi`: the OpenAPI document the API serves (built from the route schemas, no server,
 * no database) linted by Redocly with redocly.yaml. Exits with Redocly's code: non-zero on any error.
 */
const dir = mkdtempSync(join(tmpdir(), 'switchboard-openapi-'));
try {
  const file = join(dir, 'openapi.json');
  writeFileSync(file, JSON.stringify(buildOpenApi(ROUTES), null, 2));
  const result = spawnSync(join(ROOT_DIR, 'node_modules', '.bin', 'redocly'),
    ['lint', file, '--config', join(ROOT_DIR, 'redocly.yaml'), '--format', 'summary'], { stdio: 'inherit' });
  process.exitCode = result.status ?? 1;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
