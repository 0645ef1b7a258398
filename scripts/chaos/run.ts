import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../db/local-state';
import { ensureTemporalCli } from '../temporal-cli';
import { FAULTS, parseFaults } from './faults';
import { breachCount, formatFigures } from './reconcile';
import { ChaosStack, startChaosStack } from './stack';
import { runChaos } from './suite';

/**
 * `npm run chaos` (docs/reliability.md): the stack as separate processes, retrying clients driving
 * payments, captures, refunds and webhook deliveries while workers, the Temporal server and the API are
 * SIGKILLed, Postgres's connections cut and the processor hangs or fails after charging; then the
 * books reconciled against the processor's ledger. Prints the figures; exits 1 on any breach.
 *
 * Environment: DATABASE_URL (a server to create the run's database on; else an embedded Postgres),
 * CHAOS_PAYMENTS (default 240), CHAOS_CLIENTS (6), CHAOS_TRIES (tries per request, 40), CHAOS_FAULTS
 * (comma-separated, default all, in order: docs/reliability.md), CHAOS_DRIVE_SECONDS (600),
 * CHAOS_SETTLE_SECONDS (180), CHAOS_KEEP_DATABASE (keep the run's database for a look afterwards).
 */
const log = (line = '') => process.stdout.write(`${line}\n`);

function count(name: string, fallback: number): number {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer`);
  return value;
}

async function main(): Promise<number> {
  const config = loadConfig();
  const payments = count('CHAOS_PAYMENTS', 240);
  const clients = count('CHAOS_CLIENTS', 6);
  const faults = parseFaults(process.env.CHAOS_FAULTS, FAULTS);
  const scratch = mkdtempSync(join(tmpdir(), 'switchboard-chaos-'));
  log(`chaos: ${payments} payments, ${clients} clients, faults: ${faults.join(', ')}`);
  const cli = await ensureTemporalCli('temporal', { dataDir: config.dataDir, log });
  if (cli.type !== 'existing-path') throw new Error('the chaos suite SIGKILLs the Temporal server: it needs the Temporal CLI on this machine (TEMPORAL_CLI_PATH)');
  let stack: ChaosStack | undefined;
  let failed = true;
  try {
    stack = await startChaosStack({ config, scratch, temporalCli: cli.path, log });
    const result = await runChaos(stack, {
      config, payments, clients, faults, tries: count('CHAOS_TRIES', 40),
      driveMs: count('CHAOS_DRIVE_SECONDS', 600) * 1000, settleMs: count('CHAOS_SETTLE_SECONDS', 180) * 1000, log,
    });
    log(`\nchaos: ${result.seconds} s, ${result.faults.length} faults\n`);
    log(formatFigures(result.figures));
    const breaches = breachCount(result.figures);
    log(breaches ? `\nchaos: ${breaches} breaches (process logs in ${join(scratch, 'logs')})` : '\nchaos: no breach');
    failed = breaches > 0;
    return failed ? 1 : 0;
  } finally {
    await stack?.close();
    if (!failed) rmSync(scratch, { recursive: true, force: true });
  }
}

if (require.main === module) {
  main().then((code) => process.exit(code), (err: unknown) => {
    console.error('chaos failed:', err instanceof Error ? err.stack : err);
    process.exit(2);
  });
}
