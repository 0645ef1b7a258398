/** `npm run ops -- vault:…`: move every vault value to the newest key, and see how far that is. */
import { SEALED_COLUMNS, sealedCountsByKey } from '../../db/sealed-columns';
import { Vault } from '../../lib/vault';
import type { VaultRotationProgress } from '../../contracts/vault';
import { startVaultRotation, vaultRotationState, type VaultRotationState } from '../../workflows/vault/client';
import { type Args, type Command, type Ctx, EXIT, failure, print, table, usage } from './shared';

export const VAULT_USAGE = `Vault keys (docs/production.md#rotating-the-vault-key)
  vault:rotate [--detach]         re-encrypt every vault value under the newest VAULT_KEYS key (starts the
                                  rotation, or attaches to the running one); prints progress until done
  vault:status                    values per column still under an older key, and the rotation's progress
`;

/** How often vault:rotate prints progress while it waits. */
const POLL_MS = 2000;

const newestKeyId = (ctx: Ctx) => new Vault(ctx.config.vaultKeys).currentKeyId;

function progressLine(progress: VaultRotationProgress | undefined): string {
  if (!progress) return 'starting';
  const done = progress.columns.filter((c) => c.done).length;
  const moved = progress.columns.reduce((n, c) => n + c.reencrypted, 0);
  return `${done}/${progress.columns.length} columns done, ${moved} values re-encrypted, ${progress.batches} batches`;
}

async function vaultRotate(ctx: Ctx, args: Args): Promise<number> {
  if (args.positionals.length) throw usage('vault:rotate takes no positional arguments');
  const keyId = newestKeyId(ctx);
  const client = await ctx.temporal();
  const handle = await startVaultRotation(client, { keyId });
  if (!ctx.json) ctx.io.out(`Rotation to vault key ${keyId}: workflow ${handle.workflowId}`);
  let state: VaultRotationState | undefined;
  for (;;) {
    state = await vaultRotationState(client, keyId);
    if (args.values.detach || state?.status !== 'RUNNING') break;
    if (!ctx.json) ctx.io.out(`  ${progressLine(state.progress)}`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  print(ctx, { key_id: keyId, workflow_id: handle.workflowId, ...state }, () => `${state?.status ?? 'NOT FOUND'}: ${progressLine(state?.progress)}${
    state?.failure ? `\n${state.failure}` : ''}${state?.status === 'COMPLETED' ? '\nCheck with: npm run ops -- vault:status' : ''}`);
  if (state?.status === 'RUNNING' || state?.status === 'COMPLETED') return EXIT.ok;
  throw failure(`the rotation to ${keyId} ended ${state?.status ?? 'unseen'}${state?.failure ? `: ${state.failure}` : ''}`);
}

async function vaultStatus(ctx: Ctx, args: Args): Promise<number> {
  if (args.positionals.length) throw usage('vault:status takes no positional arguments');
  const keyId = newestKeyId(ctx);
  const columns: { column: string; current: number; older: number; by_key: Record<string, number> }[] = [];
  for (const c of SEALED_COLUMNS) {
    const byKey = await sealedCountsByKey(ctx.db(), c);
    const older = Object.entries(byKey).filter(([id]) => id !== keyId).reduce((n, [, count]) => n + count, 0);
    columns.push({ column: c.name, current: byKey[keyId] ?? 0, older, by_key: byKey });
  }
  const older = columns.reduce((n, c) => n + c.older, 0);
  const rotation = await vaultRotationState(await ctx.temporal(), keyId).catch((err: Error) => ({ status: `unknown (${err.message})` }));
  print(ctx, { key_id: keyId, older, columns, rotation: rotation ?? null }, () => [
    table(['COLUMN', `UNDER ${keyId}`, 'UNDER OLDER KEYS', 'BY KEY'], columns.map((c) => [
      c.column, c.current, c.older, Object.entries(c.by_key).map(([id, n]) => `${id}:${n}`).join(' '),
    ])),
    '',
    `${older} values under an older key than ${keyId}.${older ? ' Run: npm run ops -- vault:rotate' : ' Older keys can be removed from VAULT_KEYS.'}`,
    `Rotation to ${keyId}: ${rotation ? `${rotation.status}${'progress' in rotation ? `, ${progressLine(rotation.progress)}` : ''}` : 'never started'}`,
  ].join('\n'));
  return EXIT.ok;
}

export const vaultCommands: Record<string, Command> = { 'vault:rotate': vaultRotate, 'vault:status': vaultStatus };
