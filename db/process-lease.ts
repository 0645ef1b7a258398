import { randomInt } from 'node:crypto';
import pg from 'pg';
import { ownConnection, type Db } from './knex';

/**
 * A process's lease: a session-level advisory lock held on a connection of its own for as long as the
 * process lives. When the process dies (SIGKILL included) the kernel closes its socket, Postgres ends
 * the session and the lock goes with it within milliseconds — so whatever the process claimed under
 * its lease (an Idempotency-Key, say) can be told apart from the claims of a process still at work.
 */
export interface ProcessLease {
  /** The lease's id, taking the lock on first use; null while Postgres cannot be reached. */
  id(): Promise<number | null>;
  close(): Promise<void>;
}

/** The advisory-lock namespace of leases (the first of the two int4 keys); the second is the lease id. */
export const LEASE_LOCK_CLASS = 0x5b1d;

const RECONNECT_AFTER_MS = 1_000;

export function processLease(db: Db, log: (message: string, err: unknown) => void = () => {}): ProcessLease {
  let held: Promise<{ client: pg.Client; id: number }> | undefined;
  let lastId: number | undefined;
  let failedAt = 0;
  let closed = false;

  const acquire = async () => {
    const client = ownConnection(db, 'lease');
    // Either event means the session, and with it the lock, is gone: the next id() takes it again.
    client.on('error', (err) => log('process lease connection lost', err));
    client.on('end', () => { held = undefined; });
    await client.connect();
    const id = await lockAnId(client, lastId);
    lastId = id;
    return { client, id };
  };

  return {
    async id() {
      if (closed || Date.now() - failedAt < RECONNECT_AFTER_MS) return null;
      held ??= acquire().catch((err) => {
        held = undefined;
        failedAt = Date.now();
        throw err;
      });
      return held.then((h) => h.id, (err) => (log('process lease unavailable', err), null));
    },
    async close() {
      closed = true;
      const h = await held?.catch(() => undefined);
      held = undefined;
      await h?.client.end().catch(() => {});
    },
  };
}

/** Takes the lock of a free id: the one held before a reconnect when it is still free, else a random one. */
async function lockAnId(client: pg.Client, preferred: number | undefined): Promise<number> {
  for (let tries = 0; tries < 20; tries++) {
    const id = tries === 0 && preferred !== undefined ? preferred : randomInt(1, 2 ** 31 - 1);
    const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS locked', [LEASE_LOCK_CLASS, id]);
    if (rows[0].locked) return id;
  }
  throw new Error('no free process lease id');
}

/** SQL that is true while the process holding lease `ownerColumn` is alive (its lock is held in this database). */
export function leaseAlive(ownerColumn: string): string {
  return `EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted
    AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
    AND l.classid = ${LEASE_LOCK_CLASS}::oid AND l.objid = ${ownerColumn}::oid AND l.objsubid = 2)`;
}
