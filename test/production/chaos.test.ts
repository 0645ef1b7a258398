import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { loadConfig } from '../../db/local-state';
import { ensureTemporalCli } from '../../scripts/temporal-cli';
import { formatFigures } from '../../scripts/chaos/reconcile';
import { ChaosStack, startChaosStack } from '../../scripts/chaos/stack';
import { runChaos } from '../../scripts/chaos/suite';
import { suiteEnv } from '../support/stack';

/**
 * The short `npm run chaos` (docs/reliability.md): the stack as separate processes (its own Temporal
 * server and database, so the faults touch nothing of the other test files), a dozen payments, captures
 * and refunds from retrying clients while a worker and the API are SIGKILLed and every Postgres
 * connection is cut; then the books against the processor's ledger and the webhook receiver.
 */
describe('chaos, short', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'switchboard-chaos-test-'));
  const serverUrl = new URL(inject('databaseUrl'));
  serverUrl.pathname = '/postgres';
  const config = loadConfig({ ...suiteEnv(), DATABASE_URL: serverUrl.toString() });
  let stack: ChaosStack | undefined;

  beforeAll(async () => {
    const cli = process.env.TEMPORAL_CLI_PATH
      ? { type: 'existing-path' as const, path: process.env.TEMPORAL_CLI_PATH }
      : await ensureTemporalCli('temporal', { dataDir: config.dataDir, log: () => {} });
    if (cli.type !== 'existing-path') throw new Error('the chaos test SIGKILLs a Temporal server: it needs the Temporal CLI');
    stack = await startChaosStack({ config, scratch, temporalCli: cli.path, bundlePath: inject('workflowBundlePath'), log: () => {} });
  }, 90_000);

  afterAll(async () => {
    await stack?.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('answers every request, loses and double-charges nothing, and delivers every event once per id through a worker kill, an API kill, a processor that fails after charging and a Postgres cut', async () => {
    const lines: string[] = [];
    const { figures, faults } = await runChaos(stack!, {
      config, payments: 16, clients: 3, tries: 20, faults: ['kill-worker-a', 'kill-api', 'processor-500-after-work', 'cut-postgres'],
      driveMs: 60_000, settleMs: 30_000, log: (line) => lines.push(line),
    });
    const report = `${lines.join('\n')}\n${formatFigures(figures)}`;
    expect(faults, report).toHaveLength(4);
    expect(figures.breaches, report).toEqual(Object.fromEntries(Object.keys(figures.breaches).map((name) => [name, 0])));
    expect(figures.requests.answered, report).toBe(figures.requests.total);
    expect(figures.payments.in_db, report).toBe(16);
    expect(figures.processor.captured, report).toBe(figures.processor.succeeded_amounts);
    expect(figures.processor.captured, report).toBeGreaterThan(0);
    expect(figures.processor.refunded, report).toBe(figures.processor.refunds_succeeded);
    expect(figures.processor.refunded, report).toBeGreaterThan(0);
    expect(figures.webhooks.delivered, report).toBe(figures.webhooks.events);
    expect(figures.webhooks.events, report).toBeGreaterThan(12 * 2);
  }, 120_000);
});
