import { parseArgs } from 'node:util';
import type { Client } from '@temporalio/client';
import { createDb, type Db } from '../db/knex';
import { loadConfig } from '../db/local-state';
import { localStackTargets } from '../lib/local-stack';
import { connectClient } from '../workflows/client';
import { AUDIT_USAGE, auditCommands } from './ops/audit';
import { BILLING_USAGE, billingCommands } from './ops/billing';
import { PAYMENTS_USAGE, paymentCommands } from './ops/payments';
import { type Args, type Command, type Ctx, EXIT, failure, OpsError, type OpsIo, usage } from './ops/shared';
import { VAULT_USAGE, vaultCommands } from './ops/vault';
import { WEBHOOKS_USAGE, webhookCommands } from './ops/webhooks';

/**
 * `npm run ops -- <command>`: the operator's tools for stuck payments, payments needing attention, subscriptions and
 * their invoices, failed webhooks and vault key rotation. Talks to
 * Postgres and Temporal directly (the same DATABASE_URL / TEMPORAL_ADDRESS as the server; with
 * nothing set, those of a running `npm start`). Exit codes: 0 ok, 1 failure, 2 usage, 3 not found.
 * The commands live by feature in scripts/ops/.
 */
export { EXIT, type OpsIo };
export { table } from './ops/shared';

const USAGE = `Usage: npm run ops -- <command> [options]

${PAYMENTS_USAGE}
${BILLING_USAGE}
${WEBHOOKS_USAGE}
${VAULT_USAGE}
${AUDIT_USAGE}
Options: --json (machine-readable output), --help
Exit codes: 0 ok, 1 failure, 2 usage, 3 not found
Environment: DATABASE_URL, TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, … as for the server
             (unset: the embedded Postgres and local Temporal of a running \`npm start\`)
`;

const COMMANDS: Record<string, Command> = { ...paymentCommands, ...billingCommands, ...webhookCommands, ...vaultCommands, ...auditCommands };

/** Runs one command; answers the exit code. In-process for tests; `main` below for the shell. */
export async function runOps(argv: string[], opts: { env?: NodeJS.ProcessEnv; io?: OpsIo } = {}): Promise<number> {
  const io = opts.io ?? { out: (t) => process.stdout.write(`${t}\n`), err: (t) => process.stderr.write(`${t}\n`) };
  const env = opts.env ?? process.env;
  let db: Db | undefined;
  let client: Promise<Client> | undefined;
  try {
    let parsed;
    try {
      parsed = parseArgs({
        args: argv,
        allowPositionals: true,
        strict: true,
        options: {
          json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' },
          'older-than': { type: 'string' }, account: { type: 'string' }, limit: { type: 'string' }, reason: { type: 'string' },
          endpoint: { type: 'string' }, since: { type: 'string' }, until: { type: 'string' },
          detach: { type: 'boolean' },
        },
      });
    } catch (err) {
      throw usage((err as Error).message);
    }
    const [command, ...positionals] = parsed.positionals;
    if (parsed.values.help || command === 'help') {
      io.out(USAGE);
      return EXIT.ok;
    }
    if (!command) throw usage('no command given');
    const run = COMMANDS[command];
    if (!run) throw usage(`unknown command "${command}"`);

    const config = loadConfig(env);
    const targets = localStackTargets({ databaseUrl: config.databaseUrl, temporalAddress: config.temporal.address }, env);
    const ctx: Ctx = {
      config,
      json: parsed.values.json === true,
      io,
      db: () => (db ??= createDb(targets.databaseUrl, { max: 4 })),
      temporal: () => (client ??= connectClient(config, targets.temporalAddress).catch((err) => {
        throw failure(`Temporal at ${targets.temporalAddress} is not reachable (${(err as Error).message}). Set TEMPORAL_ADDRESS, or run npm start.`);
      })),
    };
    return await run(ctx, { positionals, values: parsed.values as Args['values'] });
  } catch (err) {
    if (err instanceof OpsError) {
      io.err(`ops: ${err.code === EXIT.usage ? `${err.message}\n\n${USAGE}` : err.message}`);
      return err.code;
    }
    const message = (err as Error)?.message ?? String(err);
    const code = (err as { code?: string })?.code;
    if (code === 'ECONNREFUSED' || code === '28P01' || code === '3D000') {
      io.err(`ops: Postgres is not reachable (${message}). Set DATABASE_URL, or run npm start.`);
    } else {
      io.err(`ops: ${message}`);
    }
    return EXIT.failure;
  } finally {
    await db?.destroy().catch(() => {});
    const connected = await client?.catch(() => undefined);
    await connected?.connection.close().catch(() => {});
  }
}

if (require.main === module) {
  void runOps(process.argv.slice(2)).then((code) => { process.exitCode = code; });
}
