/**
 * The disputes command client: the only code that starts, signals, updates or queries dispute workflows
 * from the client side (docs/architecture.md). A refused answer is 409 with its reason.
 */
import { Client, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApiError } from '../../lib/errors';
import { SEARCH_ATTRIBUTES, TASK_QUEUES } from '../../contracts/temporal';
import {
  disputeQueries, disputeSignals, disputeUpdates, disputeWorkflowId,
  type DisputeClock, type DisputeInput, type SealedDisputeAnswer,
} from '../../contracts/disputes';
import { applicationFailure, isNotFound, resendingAborted, temporalUiLink } from '../client';
import { disputeWorkflow } from './workflow';

/** The operator's way into the dispute's workflow. */
export function disputeWorkflowLink(config: { temporal: { uiUrl: string; namespace: string } }, disputeId: string) {
  const workflowId = disputeWorkflowId(disputeId);
  return { workflow_id: workflowId, namespace: config.temporal.namespace, ui_url: temporalUiLink(config, workflowId) };
}

/**
 * Hands a stored processor event to its dispute's workflow, starting it if it is not running
 * (signal-with-start): the first notice of a dispute starts it, and so does one after it closed.
 */
export async function signalDisputeEvent(client: Client, input: DisputeInput, eventId: string, accountId: string): Promise<void> {
  await resendingAborted(() => client.workflow.signalWithStart(disputeWorkflow, {
    workflowId: disputeWorkflowId(input.disputeId),
    taskQueue: TASK_QUEUES.payments,
    args: [input],
    signal: disputeSignals.processorEvent,
    signalArgs: [{ eventId }],
    typedSearchAttributes: [
      { key: SEARCH_ATTRIBUTES.DisputeId, value: input.disputeId },
      { key: SEARCH_ATTRIBUTES.AccountId, value: accountId },
      { key: SEARCH_ATTRIBUTES.Environment, value: input.environment },
    ],
    staticSummary: `dispute · ${accountId} · ${input.disputeId}`,
    staticDetails: `Dispute ${input.disputeId} (the processor's ${input.processorDisputeId}) reported through config ${input.providerConfigId} (${input.environment}).`,
  }));
}

/**
 * Sends the merchant's answer (evidence, submit, accept) under `updateId` and answers once applied; 409
 * with the reason when the workflow refused it, or when the dispute's workflow has ended (it is closed).
 */
export async function answerDispute(client: Client, disputeId: string, answer: SealedDisputeAnswer, updateId: string): Promise<void> {
  let result;
  try {
    result = await resendingAborted(() => client.workflow.getHandle(disputeWorkflowId(disputeId)).executeUpdate(disputeUpdates.answer, { args: [answer], updateId }));
  } catch (err) {
    const refusal = err instanceof WorkflowUpdateFailedError ? applicationFailure(err) : undefined;
    if (refusal) throw new ApiError('invalid_state', refusal.message, (refusal.details?.[0] ?? {}) as Record<string, unknown>);
    if (isNotFound(err)) throw new ApiError('invalid_state', 'The dispute is closed; it takes no more answers.', { refusal: 'dispute_closed' });
    throw err;
  }
  if (!result.applied) throw new ApiError('invalid_state', result.message, { refusal: result.code });
}

/** The dispute workflow's live `state` query. */
export function disputeState(client: Client, disputeId: string): Promise<DisputeClock | null> {
  return client.workflow.getHandle(disputeWorkflowId(disputeId)).query(disputeQueries.state);
}
