/**
 * The checkout sessions command client: the only code that starts, updates or queries session workflows
 * from the client side (docs/architecture.md). Temporal being unreachable is translated where every
 * client's is (workflows/client.ts, through the API's error middleware); a refused expiry is translated here.
 */
import { Client, WithStartWorkflowOperation, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApiError, withArticle } from '../../lib/errors';
import { SEARCH_ATTRIBUTES, TASK_QUEUES } from '../../contracts/temporal';
import {
  checkoutQueries, checkoutUpdates, checkoutWorkflowId, type CheckoutOutcome, type CheckoutSessionInput, type CheckoutState,
} from '../../contracts/checkout';
import { applicationFailure, isNotFound, resendingAborted } from '../client';
import { checkoutSessionWorkflow } from './workflow';
import { plainAmount } from '../../lib/money';

/**
 * Starts the session's workflow with its `create` update (update-with-start) and answers once the
 * workflow has written the session's row and started its payment, so both are readable when the API
 * answers, and no session row exists without the workflow that ends it. A retry with the same session id
 * joins the running workflow; one after it ended is refused a second run (the caller reads the row).
 */
export async function startCheckoutSession(client: Client, input: CheckoutSessionInput): Promise<void> {
  await resendingAborted(() => client.workflow.executeUpdateWithStart(checkoutUpdates.create, {
    updateId: 'create',
    startWorkflowOperation: new WithStartWorkflowOperation(checkoutSessionWorkflow, {
      workflowId: checkoutWorkflowId(input.sessionId),
      taskQueue: TASK_QUEUES.payments,
      args: [input],
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      typedSearchAttributes: [
        { key: SEARCH_ATTRIBUTES.PaymentId, value: input.paymentId },
        { key: SEARCH_ATTRIBUTES.AccountId, value: input.accountId },
        { key: SEARCH_ATTRIBUTES.Environment, value: input.environment },
      ],
      staticSummary: `checkout ${plainAmount(input.amount, input.currency)} · ${input.accountId} · ${input.paymentId}`,
      staticDetails: `Checkout session of account ${input.accountId} (${input.environment}) for payment ${input.paymentId}, expiring at ${new Date(input.expiresAt).toISOString()}.`,
    }),
  }));
}

/**
 * Asks the session to expire now. Answers only when it did; otherwise 409 `invalid_state`: the session
 * had ended (its workflow too, `statusOf` reads the row), its payment turned out paid (it completed
 * instead), or its payment is being paid right now (it stays open until that ends).
 */
export async function expireCheckoutSession(client: Client, sessionId: string, statusOf: () => Promise<string | undefined>): Promise<void> {
  let outcome: CheckoutOutcome;
  try {
    outcome = await resendingAborted(() => client.workflow.getHandle(checkoutWorkflowId(sessionId)).executeUpdate(checkoutUpdates.expire));
  } catch (err) {
    const refusal = err instanceof WorkflowUpdateFailedError ? applicationFailure(err) : undefined;
    if (refusal?.type === 'invalid_state') throw new ApiError('invalid_state', refusal.message, (refusal.details?.[0] ?? {}) as Record<string, unknown>);
    if (isNotFound(err)) {
      const status = await statusOf();
      throw new ApiError('invalid_state', `${withArticle(status ?? 'ended')} checkout session cannot expire.`, { status });
    }
    throw err;
  }
  switch (outcome.outcome) {
    case 'expired':
      return;
    case 'in_flight':
      throw new ApiError('invalid_state', `The session's payment is being paid right now (${outcome.paymentStatus}); the session stays open until that ends.`, {
        status: 'OPEN', payment_status: outcome.paymentStatus,
      });
    default:
      throw new ApiError('invalid_state', `${withArticle(outcome.status)} checkout session cannot expire.`, { status: outcome.status });
  }
}

/** The session workflow's live `state` query. */
export function checkoutSessionState(client: Client, sessionId: string): Promise<CheckoutState> {
  return client.workflow.getHandle(checkoutWorkflowId(sessionId)).query(checkoutQueries.state);
}
