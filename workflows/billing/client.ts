/**
 * The subscriptions command client: the only code that starts, changes, signals or queries subscription
 * workflows from the client side (docs/architecture.md). A change refused by the workflow (a validator,
 * or the activity that applies it) is 409 `invalid_state` with the reason; a change to a subscription
 * whose workflow has ended is too.
 */
import { Client, WithStartWorkflowOperation, WorkflowExecutionDescription, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApiError, withArticle } from '../../lib/errors';
import { SEARCH_ATTRIBUTES, TASK_QUEUES } from '../../contracts/temporal';
import {
  clockAdvanceWorkflowId, subscriptionQueries, subscriptionSignals, subscriptionUpdates, subscriptionWorkflowId,
  type ChangeAnswer, type ClockAdvance, type SealedChange, type SubscriptionInput, type SubscriptionState, type SubscriptionStatus,
} from '../../contracts/billing';
import { applicationFailure, isNotFound, resendingAborted, temporalUiLink } from '../client';
import { clockAdvanceWorkflow } from './test-clock';
import { subscriptionWorkflow } from './workflow';

/** The operator's way into the subscription's workflow: its id, namespace and Temporal UI page. */
export function subscriptionWorkflowLink(config: { temporal: { uiUrl: string; namespace: string } }, subscriptionId: string) {
  const workflowId = subscriptionWorkflowId(subscriptionId);
  return { workflow_id: workflowId, namespace: config.temporal.namespace, ui_url: temporalUiLink(config, workflowId) };
}

/**
 * Starts the subscription's workflow with its `create` update (update-with-start) and answers once the
 * row exists and the first invoice's payment has ended its walk (or is waiting for the customer). A retry
 * with the same id joins the running workflow; one after it ended is refused a second run.
 */
export async function startSubscription(client: Client, input: SubscriptionInput): Promise<{ status: SubscriptionStatus }> {
  return resendingAborted(() => client.workflow.executeUpdateWithStart(subscriptionUpdates.create, {
    updateId: 'create',
    startWorkflowOperation: new WithStartWorkflowOperation(subscriptionWorkflow, {
      workflowId: subscriptionWorkflowId(input.subscriptionId),
      taskQueue: TASK_QUEUES.payments,
      args: [input],
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      typedSearchAttributes: [
        { key: SEARCH_ATTRIBUTES.SubscriptionId, value: input.subscriptionId },
        { key: SEARCH_ATTRIBUTES.AccountId, value: input.accountId },
        { key: SEARCH_ATTRIBUTES.Environment, value: input.environment },
        { key: SEARCH_ATTRIBUTES.SubscriptionStatus, value: 'INCOMPLETE' },
      ],
      staticSummary: `subscription · ${input.accountId} · ${input.subscriptionId}`,
      staticDetails: `Subscription ${input.subscriptionId} of customer ${input.customerId}, account ${input.accountId} (${input.environment})${input.testClockId ? `, on test clock ${input.testClockId}` : ''}.`,
    }),
  }));
}

/**
 * Sends a change to the subscription's workflow under `updateId` (the API's command id: a retry of the
 * same request gets the first one's answer) and answers once it is applied; 409 `invalid_state` when it
 * was refused or the subscription has ended (`statusOf` reads the row for the message).
 */
export async function changeSubscription(
  client: Client, subscriptionId: string, change: SealedChange, updateId: string, statusOf: () => Promise<string | undefined>,
): Promise<void> {
  let answer: ChangeAnswer;
  try {
    answer = await resendingAborted(() => client.workflow.getHandle(subscriptionWorkflowId(subscriptionId))
      .executeUpdate(subscriptionUpdates.change, { args: [change], updateId }));
  } catch (err) {
    const refusal = err instanceof WorkflowUpdateFailedError ? applicationFailure(err) : undefined;
    if (refusal?.type === 'invalid_state') throw new ApiError('invalid_state', refusal.message, (refusal.details?.[0] ?? {}) as Record<string, unknown>);
    if (isNotFound(err)) {
      const status = await statusOf();
      throw new ApiError('invalid_state', `${withArticle(status ?? 'ended')} subscription takes no more changes.`, { status });
    }
    throw err;
  }
  if (!answer.applied) throw new ApiError('invalid_state', answer.message, { refusal: answer.code });
}

/**
 * Starts telling the subscriptions on a test clock that it moved (clockAdvanceWorkflow), and answers
 * once that is durable, not once they are told. A retried advance joins the workflow still telling
 * them; one after it finished tells them again, which is harmless: the signal is a nudge.
 */
export async function startClockAdvance(client: Client, advance: ClockAdvance): Promise<void> {
  await client.workflow.start(clockAdvanceWorkflow, {
    workflowId: clockAdvanceWorkflowId(advance),
    taskQueue: TASK_QUEUES.payments,
    args: [advance],
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    typedSearchAttributes: [
      { key: SEARCH_ATTRIBUTES.AccountId, value: advance.accountId },
      { key: SEARCH_ATTRIBUTES.Environment, value: advance.environment },
    ],
    staticSummary: `test clock · ${advance.accountId} · ${advance.clockId} → ${new Date(advance.frozenTime).toISOString()}`,
  });
}

/** Tells each subscription on a test clock that the clock moved (a nudge: each reads the clock's row). */
export async function tellClockAdvanced(client: Client, subscriptionIds: string[]): Promise<void> {
  await Promise.all(subscriptionIds.map(async (id) => {
    try {
      await client.workflow.getHandle(subscriptionWorkflowId(id)).signal(subscriptionSignals.clockAdvanced);
    } catch (err) {
      // A subscription whose workflow has ended has nothing left to bill.
      if (!isNotFound(err)) throw err;
    }
  }));
}

/** The subscription workflow's live `state` query. */
export function subscriptionState(client: Client, subscriptionId: string): Promise<SubscriptionState> {
  return client.workflow.getHandle(subscriptionWorkflowId(subscriptionId)).query(subscriptionQueries.state);
}

/** The subscription workflow's description (its run's status, RUNNING or closed), for the ops CLI. */
export function describeSubscription(client: Client, subscriptionId: string): Promise<WorkflowExecutionDescription> {
  return client.workflow.getHandle(subscriptionWorkflowId(subscriptionId)).describe();
}
