/**
 * What every `npm run ops` command shares: its context (config, Postgres, Temporal, output), exit codes
 * and errors, argument parsing and the text/JSON output helpers. The commands live by feature beside it
 * (scripts/ops/payments.ts, scripts/ops/webhooks.ts); scripts/ops.ts dispatches.
 */
import type { Client } from '@temporalio/client';
import ms from 'ms';
import type { Environment } from '../../db/environments';
import type { Db } from '../../db/knex';
import type { Config } from '../../lib/config';

export const EXIT = { ok: 0, failure: 1, usage: 2, notFound: 3 } as const;

export interface OpsIo { out(text: string): void; err(text: string): void }

/** An error that ends the command with this exit code and message. */
export class OpsError extends Error {
  constructor(readonly code: number, message: string) {
    super(message);
  }
}

/** A usage error: scripts/ops.ts prints the usage text after its message. */
export const usage = (message: string) => new OpsError(EXIT.usage, message);
export const notFound = (message: string) => new OpsError(EXIT.notFound, message);
export const failure = (message: string) => new OpsError(EXIT.failure, message);

export const ENVIRONMENTS: Environment[] = ['production', 'sandbox'];

export interface Ctx {
  config: Config;
  db(): Db;
  temporal(): Promise<Client>;
  json: boolean;
  io: OpsIo;
}

export interface Args { positionals: string[]; values: Record<string, string | boolean | undefined> }

/** One command: what it does with the context and its arguments, answering the exit code. */
export type Command = (ctx: Ctx, args: Args) => Promise<number>;

// ------------------------------------------------------------------------------------------------
// Output

/** A plain text table: header row, then one line per row, columns padded to fit. */
export function table(headers: string[], rows: (string | number | null | undefined)[][]): string {
  const cells = rows.map((r) => r.map((c) => (c === null || c === undefined || c === '' ? '-' : String(c))));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i].length)));
  const line = (r: string[]) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  ');
  return [line(headers), ...cells.map(line)].join('\n');
}

export function kv(pairs: [string, unknown][]): string {
  const width = Math.max(...pairs.map(([k]) => k.length));
  return pairs.map(([k, v]) => `${k.padEnd(width)}  ${v === null || v === undefined || v === '' ? '-' : String(v)}`).join('\n');
}

export const iso = (d: Date | string | null | undefined) => (d ? new Date(d).toISOString() : null);
export const money = (amount: number | string, currency: string) => `${(Number(amount) / 100).toFixed(2)} ${currency}`;
export const age = (msAgo: number) => ms(Math.max(0, Math.round(msAgo / 1000) * 1000));

export function print(ctx: Ctx, json: unknown, text: () => string): void {
  ctx.io.out(ctx.json ? JSON.stringify(json, null, 2) : text());
}

// ------------------------------------------------------------------------------------------------
// Lookups and arguments

/** The first environment holding the row (ids are unique across them), through a store's finder. */
export async function inEnvironments<T>(find: (env: Environment) => Promise<T | undefined>): Promise<{ env: Environment; row: T } | undefined> {
  for (const env of ENVIRONMENTS) {
    const row = await find(env);
    if (row) return { env, row };
  }
  return undefined;
}

export function withTimeout<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`${what} did not answer within ${timeoutMs / 1000}s (is a worker running?)`)), timeoutMs); });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export function parseDuration(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const parsed = ms(value as ms.StringValue);
  if (typeof parsed !== 'number' || !Number.isFinite(parsed) || parsed < 0) throw usage(`${flag} takes a duration such as 5m, 90s or 2h (got "${value}")`);
  return parsed;
}

export function parseTime(flag: string, value: string | undefined): Date | undefined {
  if (value === undefined) return undefined;
  const date = new Date(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(date.getTime())) throw usage(`${flag} takes an ISO-8601 time such as 2026-11-21T10:00:00Z (got "${value}")`);
  return date;
}

export function parseLimit(value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 1000) throw usage(`--limit takes an integer from 1 to 1000 (got "${value}")`);
  return n;
}

export function onePositional(args: Args, what: string): string {
  if (args.positionals.length !== 1) throw usage(`expected exactly one ${what}`);
  return args.positionals[0];
}

/** A string option's value (parseArgs declares which options are strings). */
export const option = (args: Args, name: string): string | undefined => {
  const value = args.values[name];
  return typeof value === 'string' ? value : undefined;
};
