/** `npm run ops -- audit:verify`: walks the audit trail's hash chains (docs/security.md §19). */
import { verifyAuditChains, type ChainReport } from '../../db/audit';
import { type Args, type Command, type Ctx, EXIT, print, table, usage } from './shared';

export const AUDIT_USAGE = `Audit trail
  audit:verify [--account acct_…] check every account's audit chain (or one); exit 1 naming the first
                                  broken row. Prints each chain's head: keep it elsewhere to compare later
`;

const label = (accountId: string | null) => accountId ?? '(platform)';

async function auditVerify(ctx: Ctx, args: Args): Promise<number> {
  if (args.positionals.length) throw usage('audit:verify takes no positional arguments (use --account acct_…)');
  const account = args.values.account as string | undefined;
  if (account !== undefined && !/^acct_[0-9A-Za-z]+$/.test(account)) throw usage(`"${account}" is not an account id (acct_…)`);
  const reports = await verifyAuditChains(ctx.db(), account);
  const broken = reports.filter((r) => r.broken);
  print(ctx, { ok: broken.length === 0, chains: reports }, () => summary(reports, broken));
  return broken.length ? EXIT.failure : EXIT.ok;
}

function summary(reports: ChainReport[], broken: ChainReport[]): string {
  const rows = table(['ACCOUNT', 'ROWS', 'HEAD SEQ', 'HEAD HASH', 'STATUS'], reports.map((r) => [
    label(r.accountId), r.rows, r.head?.seq, r.head?.hash, r.broken ? `BROKEN at ${r.broken.id} (seq ${r.broken.seq})` : 'ok',
  ]));
  const verdict = broken.length
    ? broken.map((r) => `Chain ${label(r.accountId)} is broken at audit event ${r.broken?.id} (seq ${r.broken?.seq}): ${r.broken?.problem}.`).join('\n')
    : `${reports.length} chain${reports.length === 1 ? '' : 's'} verified: every row follows the one before it.`;
  return reports.length ? `${rows}\n\n${verdict}` : 'No audit events yet.';
}

export const auditCommands: Record<string, Command> = {
  'audit:verify': auditVerify,
};
