import { Context } from '@temporalio/activity';
import type { Knex } from 'knex';
import type { DisputeRow } from '../../db/disputes';
import { findDispute } from '../../db/disputes';
import type { EventRecord } from '../../db/events';
import type { Db } from '../../db/knex';
import type { Config } from '../../lib/config';
import type { Vault } from '../../lib/vault';
import { serializeDispute } from '../../resources/disputes';
import { disputeWorkflowId, type DisputeClock, type DisputeRef } from '../../contracts/disputes';

export interface DisputeActivityDeps { db: Db; config: Config; vault: Vault }

const ms = (date: Date | null) => (date === null ? null : new Date(date).getTime());

/** The workflow's view of the row (none yet: `exists: false`), with the events the step wrote. */
export function clockOf(row: DisputeRow | undefined): DisputeClock {
  if (!row) return { exists: false, status: null, evidenceDueBy: null, submitted: false, reminded: false, overdue: false };
  return {
    exists: true, status: row.status, evidenceDueBy: ms(row.evidence_due_by), submitted: row.evidence_submitted_at !== null,
    reminded: row.reminded_at !== null, overdue: row.overdue_at !== null,
  };
}

export async function readClock(db: Knex, ref: DisputeRef): Promise<DisputeClock> {
  return clockOf(await findDispute(db, ref.environment, ref.disputeId));
}

/** An event about the dispute (charge.dispute.*), its data the dispute as the API shows it. */
export function disputeEvent(event: string, row: DisputeRow): EventRecord {
  return {
    event, accountId: row.account_id, subjectType: 'dispute', subjectId: row.id, paymentId: row.payment_id, chargeId: row.charge_id,
    data: { object: serializeDispute(row) }, actorType: 'system', actorId: 'processor',
  };
}

/** Whether the running activity belongs to the dispute's own workflow (true outside one: a test calling it directly). */
export function inOwnWorkflow(disputeId: string): boolean {
  try {
    return Context.current().info.workflowExecution?.workflowId === disputeWorkflowId(disputeId);
  } catch {
    return true;
  }
}
