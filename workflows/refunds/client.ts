/**
 * The refunds command client: the only code that starts, queries or describes refund workflows from the
 * client side (docs/architecture.md). Temporal being unreachable is translated where every client's is
 * (workflows/client.ts, through the API's error middleware); a refused reservation is translated here.
 */
import { Client, WithStartWorkflowOperation } from '@temporalio/client';
import { ApiError } from '../../lib/errors';
import { SEARCH_ATTRIBUTES, TASK_QUEUES } from '../../contracts/temporal';
import { RefundStatus, refundUpdates, refundWorkflowId, RefundWorkflowInput } from '../../contracts/refunds';
import { refundWorkflow } from './workflow';

/**
 * Starts the refund's workflow with its `create` update (update-with-start): the workflow's first
 * activity reserves the amount (or refuses), so no refund row or reservation can exist without the
 * workflow that settles it. Answers the final status if the refund settles within 5 s, else PENDING; a
 * refusal is its error (`refund_exceeds_available`, `invalid_state`). A retry with the same refund id
 * joins the running workflow.
 */
export async function createRefund(client: Client, input: RefundWorkflowInput): Promise<RefundStatus> {
  const acceptance = await client.workflow.executeUpdateWithStart(refundUpdates.create, {
    updateId: 'create',
    startWorkflowOperation: new WithStartWorkflowOperation(refundWorkflow, {
      workflowId: refundWorkflowId(input.refundId),
      taskQueue: TASK_QUEUES.payments,
      args: [input],
      workflowIdConflictPolicy: 'USE_EXISTING',
      typedSearchAttributes: [
        { key: SEARCH_ATTRIBUTES.PaymentId, value: input.paymentId },
        { key: SEARCH_ATTRIBUTES.AccountId, value: input.accountId },
        { key: SEARCH_ATTRIBUTES.Environment, value: input.environment },
        { key: SEARCH_ATTRIBUTES.RefundStatus, value: 'PENDING' },
      ],
      staticSummary: `refund ${input.amount !== undefined ? input.amount : 'of all that remains'} · ${input.chargeId} · ${input.refundId}`,
      staticDetails: `Refund ${input.refundId} of charge ${input.chargeId} (payment ${input.paymentId}), account ${input.accountId} (${input.environment}).`,
    }),
  });
  if (acceptance.outcome === 'rejected') throw new ApiError(acceptance.reason, acceptance.message, acceptance.details);
  return acceptance.status;
}
