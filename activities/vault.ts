import { ApplicationFailure } from '@temporalio/activity';
import {
  replaceSealedRows, SEALED_COLUMNS, sealedColumn, type SealedChange, type SealedColumn, type SealedRow, staleSealedRows,
} from '../db/sealed-columns';
import type { Vault } from '../lib/vault';
import { VAULT_ROTATION_FAILURES, type VaultActivities, type VaultBatch } from '../contracts/vault';
import type { ActivityDeps } from './deps';

/**
 * The key rotation's batches (workflows/vault): each re-encrypts up to `batchSize` values of one
 * column under the newest key, in one conditional UPDATE. Plaintext stays inside the
 * activity: only counts go back to history.
 */
export function vaultActivities({ db, vault }: ActivityDeps & { vault: Vault }): VaultActivities {
  return {
    async listSealedColumns(): Promise<string[]> {
      return SEALED_COLUMNS.map((c) => c.name);
    },

    async reencryptBatch({ column, keyId, batchSize }): Promise<VaultBatch> {
      if (vault.currentKeyId !== keyId) {
        throw ApplicationFailure.nonRetryable(
          `this worker's newest vault key is "${vault.currentKeyId}", the rotation moves values to "${keyId}": give every process the same VAULT_KEYS, restart, then run vault:rotate again`,
          VAULT_ROTATION_FAILURES.wrongKey,
        );
      }
      const c = sealedColumn(column);
      const rows = await staleSealedRows(db, c, keyId, batchSize);
      const reencrypted = await replaceSealedRows(db, c, rows.map((row) => underNewestKey(vault, c, row)));
      // A short batch means the column is through; so does one where every row changed meanwhile
      // (a process still on the old ring would otherwise keep this loop going; vault:status shows them).
      return { reencrypted, skipped: rows.length - reencrypted, done: rows.length < batchSize || reencrypted === 0 };
    },
  };
}

/** The row's value under the newest key (and its card's fingerprint); a value no ring key opens stops the rotation. */
function underNewestKey(vault: Vault, c: SealedColumn, row: SealedRow): SealedChange {
  let plaintext: string;
  try {
    plaintext = vault.decrypt(row.value);
  } catch (err) {
    const message = `${c.name} (row ${c.key.length === 1 ? row.key[0] : 'of a stored reply'}): ${(err as Error).message}`;
    throw ApplicationFailure.nonRetryable(message, VAULT_ROTATION_FAILURES.keyMissing);
  }
  return { row, next: vault.encrypt(plaintext), ...(c.fingerprintColumn ? { fingerprint: vault.fingerprint(plaintext) } : {}) };
}
