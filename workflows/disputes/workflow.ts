import { allHandlersFinished, condition, currentUpdateInfo, proxyActivities, proxyLocalActivities, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import { SEARCH_ATTRIBUTES } from '../../contracts/temporal';
import {
  ANSWERABLE_DISPUTE_STATUSES, CLOSED_DISPUTE_STATUSES, disputeQueries, disputeSignals, disputeUpdates, EVIDENCE_REMINDER_MS,
  type DisputeActivities, type DisputeAnswerResult, type DisputeClock, type DisputeInput, type DisputeRef, type SealedDisputeAnswer,
} from '../../contracts/disputes';

/**
 * Short Postgres steps (reading the dispute, applying a notice, the deadline's two marks), as local
 * activities: run inside the workflow task that reached them, with no round trip through the server to
 * schedule each. Each is idempotent (a notice applies once per stored event, a mark once), so a local
 * activity's retries are harmless; they retry for as long as the database is away.
 */
const steps = proxyLocalActivities<DisputeActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '10s' },
});

/** An answer goes to the processor: a minute per try, asked again while it gets no answer. */
const answers = proxyActivities<DisputeActivities>({
  startToCloseTimeout: '1m',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' },
});

interface QueuedAnswer { updateId: string; answer: SealedDisputeAnswer; result?: DisputeAnswerResult }

/**
 * One workflow per dispute (`dispute/<dp_id>`), started by the first processor notification about it
 * (signal-with-start). It applies each notification through an activity that reads the stored event
 * (so a forged signal applies nothing), holds the evidence deadline on a durable timer — a reminder three
 * days before, a mark when it passes unanswered — and takes the merchant's answers as updates, one at a
 * time. It ends when the dispute closes; a later notice (funds reinstated, a second chargeback) starts
 * it again.
 */
export async function disputeWorkflow(input: DisputeInput): Promise<void> {
  const ref: DisputeRef = { disputeId: input.disputeId, environment: input.environment };
  let clock: DisputeClock | null = null;
  const events: string[] = [];
  const queue: QueuedAnswer[] = [];

  setHandler(disputeQueries.state, () => clock);
  setHandler(disputeSignals.processorEvent, ({ eventId }) => {
    if (typeof eventId === 'string' && !events.includes(eventId)) events.push(eventId);
  });
  setHandler(disputeUpdates.answer, async (answer: SealedDisputeAnswer) => {
    const queued: QueuedAnswer = { updateId: currentUpdateInfo()?.id ?? '', answer };
    queue.push(queued);
    await condition(() => queued.result !== undefined);
    return queued.result!;
  });

  advance(await steps.readDispute(ref));
  for (;;) {
    if (events.length) {
      advance(await steps.applyDisputeEvent(ref, input, events.shift()!));
      continue;
    }
    if (queue.length) {
      const queued = queue[0];
      const { result, clock: after } = await answers.answerDispute(ref, queued.updateId, queued.answer);
      queued.result = result;
      queue.shift();
      advance(after);
      continue;
    }
    if (closed()) break;
    const due = nextDue();
    if (due && due.at <= Date.now()) {
      advance(due.kind === 'remind' ? await steps.remindEvidenceDue(ref) : await steps.markEvidenceOverdue(ref));
      continue;
    }
    const woken = () => events.length > 0 || queue.length > 0;
    if (due) await condition(woken, Math.max(1, due.at - Date.now()));
    else await condition(woken);
  }
  await condition(allHandlersFinished);

  /** Over, or never a dispute (no row: every event it was sent was not about it). */
  function closed(): boolean {
    return !clock?.exists || (clock.status !== null && CLOSED_DISPUTE_STATUSES.includes(clock.status));
  }

  /** The deadline's next step while the merchant can still answer: the reminder, then the deadline itself. */
  function nextDue(): { kind: 'remind' | 'overdue'; at: number } | undefined {
    if (!clock?.status || !ANSWERABLE_DISPUTE_STATUSES.includes(clock.status) || clock.submitted || clock.evidenceDueBy === null) return undefined;
    if (!clock.reminded) return { kind: 'remind', at: clock.evidenceDueBy - EVIDENCE_REMINDER_MS };
    if (!clock.overdue) return { kind: 'overdue', at: clock.evidenceDueBy };
    return undefined;
  }

  function advance(next: DisputeClock): void {
    if (next.status && next.status !== clock?.status) upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.DisputeStatus, value: next.status }]);
    clock = next;
  }
}
