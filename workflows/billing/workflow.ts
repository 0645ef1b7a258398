import {
  allHandlersFinished, ApplicationFailure, condition, continueAsNew, currentUpdateInfo, proxyActivities, proxyLocalActivities, setHandler,
  upsertSearchAttributes, workflowInfo,
} from '@temporalio/workflow';
import { withArticle } from '../../lib/errors';
import { SEARCH_ATTRIBUTES } from '../../contracts/temporal';
import {
  ENDED_SUBSCRIPTION_STATUSES, subscriptionQueries, subscriptionSignals, subscriptionUpdates,
  type BillingActivities, type ChangeAnswer, type SealedChange, type SubscriptionClock, type SubscriptionInput, type SubscriptionRef,
} from '../../contracts/billing';
import { nextDue, type Due } from './due';

/**
 * Short Postgres steps, as local activities: run inside the workflow task that reached them, with no round
 * trip through the server to schedule each. Every one is idempotent (a period is billed once, a settle
 * reads the payment's row), so a local activity's retries are harmless; they retry as long as the database is away.
 */
const steps = proxyLocalActivities<BillingActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '10s' },
});

/**
 * An invoice's payment: started (or found) and waited for through its walk, which may reconcile with a
 * processor for minutes. It heartbeats while it waits, so a dead worker's attempt is retried in seconds.
 */
const payments = proxyActivities<BillingActivities>({
  startToCloseTimeout: '5m',
  heartbeatTimeout: '10s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s' },
});

/** While an invoice's payment waits (PROCESSING, REQUIRES_ACTION), its row is read again this often in case its nudge never comes. */
const WAITING_LOOK_MS = 15 * 60_000;

/** A change sent while another is applied waits for its turn: changes apply one at a time, in order. */
interface QueuedChange { updateId: string; change: SealedChange; answer?: ChangeAnswer }

/** Update ids answered in earlier runs, kept across continue-as-new so that a retried change applies once. */
const CARRIED_ANSWERS = 100;

/**
 * One workflow per subscription (`subscription/<sub_id>`), started with its `create` update. It writes
 * the row and the first invoice, then lives as long as the subscription: it sleeps, on a durable timer
 * (or, on a test clock, until the clock moves), to the next thing due — a renewal at the period's end, a
 * dunning retry, a notice three days before a renewal or a trial's end, an incomplete subscription's
 * expiry — does it through an activity, and continues as new after each renewal so that its history
 * stays bounded however many years it runs. Changes arrive as the `change` update and apply one at a
 * time between steps (the workflow is the subscription's one lock), each once per update id.
 */
export async function subscriptionWorkflow(input: SubscriptionInput): Promise<void> {
  const ref: SubscriptionRef = {
    subscriptionId: input.subscriptionId, accountId: input.accountId, workspaceId: input.workspaceId, environment: input.environment, context: input.context,
  };
  const testClockId = input.testClockId;
  let clock: SubscriptionClock | null = null;
  let now = Date.now();
  let nudged = false;
  let clockMoved = false;
  let renewed = false;
  const answered = new Map<string, ChangeAnswer>(input.carried?.applied ?? []);
  const queue: QueuedChange[] = [];

  setHandler(subscriptionQueries.state, () => ({ subscriptionId: input.subscriptionId, clock, now, runs: answered.size }));
  setHandler(subscriptionSignals.invoicePayment, () => {
    nudged = true;
  });
  setHandler(subscriptionSignals.clockAdvanced, () => {
    clockMoved = true;
  });
  setHandler(subscriptionUpdates.create, async () => {
    await condition(() => clock !== null && !clock.collecting?.nextAttemptAt);
    return { status: clock!.status };
  });
  setHandler(subscriptionUpdates.change, async (change: SealedChange) => {
    const updateId = currentUpdateInfo()?.id ?? '';
    const earlier = answered.get(updateId);
    if (earlier) return earlier;
    const queued: QueuedChange = { updateId, change };
    queue.push(queued);
    await condition(() => queued.answer !== undefined);
    return queued.answer!;
  }, {
    validator: (_change: SealedChange) => {
      if (clock && ENDED_SUBSCRIPTION_STATUSES.includes(clock.status)) {
        throw ApplicationFailure.create({ type: 'invalid_state', message: `${withArticle(clock.status)} subscription takes no more changes.`, details: [{ status: clock.status }], nonRetryable: true });
      }
    },
  });

  advance(input.carried ? await steps.readSubscription(ref) : await steps.startSubscription(input));
  now = await currentTime();

  while (!ended()) {
    if (!testClockId) now = Date.now();
    // A renewal done and nothing in hand: the next run takes over with a short history.
    if (renewed && queue.length === 0 && !nudged && !clock!.collecting?.waiting) break;
    if (queue.length) {
      await applyChange(queue[0]);
      queue.shift();
      continue;
    }
    if (nudged) {
      nudged = false;
      if (clock!.collecting) advance(await steps.settleInvoice(ref, clock!.collecting.invoiceId, now));
      continue;
    }
    const due = nextDue(clock!);
    if (due && due.at <= now) {
      await act(due);
      continue;
    }
    if (testClockId) await steps.caughtUp(ref, testClockId, now);
    await sleepUntil(due?.at);
  }
  // An ended subscription no longer holds its clock back: the clock may be READY now.
  if (ended() && testClockId) await steps.caughtUp(ref, testClockId, now);
  await condition(allHandlersFinished);
  if (!ended() && renewed) {
    await continueAsNew<typeof subscriptionWorkflow>({ ...input, carried: { applied: [...answered].slice(-CARRIED_ANSWERS) } });
  }

  /** Ended, with nothing left to collect: the workflow's work is done. */
  function ended(): boolean {
    return clock !== null && ENDED_SUBSCRIPTION_STATUSES.includes(clock.status) && clock.collecting === null;
  }

  /**
   * Does what is due. On a test clock it is stamped with the moment it was due, not the clock's new
   * time: a clock moved a month ahead replays a failed renewal's retries from the day it failed.
   */
  async function act(due: Due): Promise<void> {
    const at = testClockId ? due.at : now;
    switch (due.kind) {
      case 'renew':
        advance(await steps.renewSubscription(ref, due.at, at));
        renewed = true;
        return;
      case 'pay':
        return advance(await payments.payInvoice(ref, clock!.collecting!.invoiceId, clock!.collecting!.attemptCount, at));
      case 'expire':
        return advance(await steps.expireIncomplete(ref, at));
      case 'notice':
        return advance(await steps.sendNotice(ref, due.notice));
    }
  }

  async function applyChange(queued: QueuedChange): Promise<void> {
    const { answer, clock: after } = await payments.applyChange(ref, queued.updateId, queued.change, now);
    answered.set(queued.updateId, answer);
    queued.answer = answer;
    advance(after);
  }

  /** Takes the row's word on the subscription and keeps the search attribute current. */
  function advance(next: SubscriptionClock): void {
    const statusChanged = clock?.status !== next.status;
    clock = next;
    if (statusChanged) upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.SubscriptionStatus, value: next.status }] as never);
  }

  /** The subscription's time: its test clock's, else the real time. */
  async function currentTime(): Promise<number> {
    return testClockId ? steps.readTestClock(ref, testClockId) : Date.now();
  }

  /**
   * Waits for the next thing due, a change, a payment's nudge or the clock's move. On a test clock no
   * timer runs: only the clock's advance moves time; a waiting payment is still looked at in real time.
   */
  async function sleepUntil(at: number | undefined): Promise<void> {
    const woken = () => queue.length > 0 || nudged || clockMoved;
    const lookAt = clock!.collecting?.waiting ? WAITING_LOOK_MS : undefined;
    const wait = testClockId ? lookAt : Math.min(at === undefined ? Infinity : at - Date.now(), lookAt ?? Infinity);
    if (wait === undefined || wait === Infinity) await condition(woken);
    else if (!(await condition(woken, Math.max(1, wait))) && clock!.collecting?.waiting) nudged = true;
    if (clockMoved) clockMoved = false;
    now = await currentTime();
    if (workflowInfo().continueAsNewSuggested) renewed = true;
  }
}
