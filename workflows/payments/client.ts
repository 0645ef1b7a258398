/**
 * The payments command client: the only code that starts, updates, queries, lists or describes payment
 * workflows from the client side (the API and the ops CLI; docs/architecture.md). It starts them by the
 * workflow function, and reads Temporal's failures by type into the error catalogue. Temporal being
 * unreachable is translated where every client's is (workflows/client.ts, through the API's middleware).
 */
import { setTimeout as delay } from 'node:timers/promises';
import {
  Client, WithStartWorkflowOperation, WorkflowExecutionDescription, WorkflowHandle, WorkflowUpdateFailedError,
} from '@temporalio/client';
import { ApiError, withArticle } from '../../lib/errors';
import { applicationFailure, isNotFound, resendingAborted, temporalUiLink } from '../client';
import { type Environment, SEARCH_ATTRIBUTES, TASK_QUEUES } from '../../contracts/temporal';
import {
  CancelInput, CaptureInput, CommandResult, ConfirmInput, PAYMENT_FAILURES, PaymentInput, PaymentState, paymentQueries, paymentUpdates,
  paymentWorkflowId,
} from '../../contracts/payments';
import { paymentWorkflow } from './workflow';
import { plainAmount } from '../../lib/money';

/** How long a confirm is waited for before it is answered PROCESSING (the walk goes on). */
export const CONFIRM_WAIT_MS = 10_000;

/** The operator's way into the payment's workflow: its id, namespace and Temporal UI page. */
export function paymentWorkflowLink(config: { temporal: { uiUrl: string; namespace: string } }, paymentId: string) {
  const workflowId = paymentWorkflowId(paymentId);
  return { workflow_id: workflowId, namespace: config.temporal.namespace, ui_url: temporalUiLink(config, workflowId) };
}

/**
 * A command to a payment whose workflow has finished (SUCCEEDED, CANCELED): it takes no more commands.
 * 409 invalid_state like any refused transition; its own type lets the ops CLI say why.
 */
export class PaymentWorkflowClosedError extends ApiError {
  constructor(readonly paymentStatus: string | undefined) {
    super('invalid_state', `${withArticle(paymentStatus ?? 'finished')} payment takes no more commands.`, { status: paymentStatus });
  }
}

/**
 * Starts the payment's workflow with its `create` update (update-with-start) and answers that update:
 * once the workflow has written the row, or, with a confirm, once that confirm's walk has ended. The
 * start (or a retry's, which finds the update already there) and the walk happen once: conflict policy
 * USE_EXISTING, and REJECT_DUPLICATE so that a retry after the workflow finished never starts a second
 * run (it fails with WorkflowExecutionAlreadyStartedError: see `isAlreadyStarted`).
 */
export function startPayment(client: Client, input: PaymentInput, confirm?: ConfirmInput): Promise<CommandResult> {
  // Sent again when the server aborts it: the workflow has started, so the next send finds it.
  return resendingAborted(() => client.workflow.executeUpdateWithStart(paymentUpdates.create, {
    updateId: 'create',
    args: confirm ? [{ confirm }] : [],
    startWorkflowOperation: new WithStartWorkflowOperation(paymentWorkflow, {
      workflowId: paymentWorkflowId(input.paymentId),
      taskQueue: TASK_QUEUES.payments,
      args: [input],
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      typedSearchAttributes: [
        { key: SEARCH_ATTRIBUTES.PaymentId, value: input.paymentId },
        { key: SEARCH_ATTRIBUTES.AccountId, value: input.accountId },
        { key: SEARCH_ATTRIBUTES.Environment, value: input.environment },
        { key: SEARCH_ATTRIBUTES.PaymentStatus, value: 'CREATED' },
      ],
      staticSummary: `${plainAmount(input.amount, input.currency)} · ${input.accountId} · ${input.paymentId}`,
      staticDetails: `Payment ${input.paymentId} of account ${input.accountId} (${input.environment}), ${input.amount} ${input.currency} minor units, auto_capture=${input.autoCapture}.`,
    }),
  }));
}

/**
 * Waits for a confirm's walk (the `confirm` update, or a `create` that carries one) until it ends, or
 * 10 s with PROCESSING: the update goes on in the workflow, and webhooks and GET tell the rest. A late
 * failure of the abandoned call has nobody left to tell.
 */
export function untilWalkEnds(update: Promise<CommandResult>): Promise<CommandResult> {
  update.catch(() => {});
  return Promise.race([update, delay(CONFIRM_WAIT_MS).then((): CommandResult => ({ status: 'PROCESSING', outcome: 'processing' }))]);
}

/** The payment's status as its row has it, for the answer to a command its finished workflow cannot take. */
export type StatusOf = (paymentId: string) => Promise<string | undefined>;

/**
 * Sends an update to a payment's workflow and reads Temporal's answer by type: a validator's refusal is
 * 409 invalid_state (nothing was written), a capture above the authorization 400 at body/amount, and a
 * finished workflow takes no more commands (PaymentWorkflowClosedError, with the row's status).
 */
async function command(
  client: Client, paymentId: string, statusOf: StatusOf, send: (handle: WorkflowHandle<typeof paymentWorkflow>) => Promise<CommandResult>,
): Promise<CommandResult> {
  try {
    return await send(client.workflow.getHandle<typeof paymentWorkflow>(paymentWorkflowId(paymentId)));
  } catch (err) {
    const refusal = err instanceof WorkflowUpdateFailedError ? applicationFailure(err) : undefined;
    const details = (refusal?.details?.[0] ?? {}) as Record<string, unknown>;
    if (refusal?.type === PAYMENT_FAILURES.invalidState) throw new ApiError('invalid_state', refusal.message, details);
    if (refusal?.type === PAYMENT_FAILURES.tooManyAttempts) throw new ApiError('too_many_attempts', refusal.message, details);
    if (refusal?.type === PAYMENT_FAILURES.captureDeclined) throw new ApiError('capture_declined', refusal.message, details);
    if (refusal?.type === PAYMENT_FAILURES.amountExceedsCapturable) {
      throw ApiError.validation([{ path: 'body/amount', message: `must be at most the capturable ${String(details.capturable)}` }]);
    }
    if (isNotFound(err)) throw new PaymentWorkflowClosedError(await statusOf(paymentId));
    throw err;
  }
}

/**
 * The update id of a command sent under an Idempotency-Key (`commandId`, api/middleware/idempotency.ts):
 * Temporal answers a repeated id with the first one's outcome, so a retry of a command whose answer was
 * lost (the API died after the workflow took it) gets that answer instead of a refusal of the next state.
 */
export interface CommandOptions { updateId?: string }

/** Confirms a payment: answers when the walk ends, or PROCESSING after 10 s (see untilWalkEnds). */
export function confirmPayment(client: Client, paymentId: string, input: ConfirmInput, statusOf: StatusOf, options: CommandOptions = {}): Promise<CommandResult> {
  return command(client, paymentId, statusOf, (handle) => untilWalkEnds(resendingAborted(() => handle.executeUpdate(paymentUpdates.confirm, { args: [input], ...options }))));
}

/**
 * The customer is back from authenticating: the workflow completes the step with the processor. Answers
 * when it has, or PROCESSING after 10 s (the walk goes on regardless).
 */
export function returnFromAuthentication(client: Client, paymentId: string, chargeId: string, statusOf: StatusOf): Promise<CommandResult> {
  return command(client, paymentId, statusOf, (handle) => untilWalkEnds(resendingAborted(() => handle.executeUpdate(paymentUpdates.authenticationReturn, { args: [{ chargeId }] }))));
}

/** Captures an AUTHORIZED payment, in full or in part. */
export function capturePayment(client: Client, paymentId: string, input: CaptureInput, statusOf: StatusOf, options: CommandOptions = {}): Promise<CommandResult> {
  return command(client, paymentId, statusOf, (handle) => resendingAborted(() => handle.executeUpdate(paymentUpdates.capture, { args: [input], ...options })));
}

/** Cancels a payment (voiding an authorization). */
export function cancelPayment(client: Client, paymentId: string, input: CancelInput, statusOf: StatusOf, options: CommandOptions = {}): Promise<CommandResult> {
  return command(client, paymentId, statusOf, (handle) => resendingAborted(() => handle.executeUpdate(paymentUpdates.cancel, { args: [input], ...options })));
}

/** The payment workflow's live `state` query. */
export function paymentState(client: Client, paymentId: string): Promise<PaymentState> {
  return client.workflow.getHandle(paymentWorkflowId(paymentId)).query(paymentQueries.state);
}

/** Temporal's description of the payment's workflow (status, times, search attributes). */
export function describePayment(client: Client, paymentId: string): Promise<WorkflowExecutionDescription> {
  return client.workflow.getHandle(paymentWorkflowId(paymentId)).describe();
}

/** Whether the payment's workflow was started (false only when Temporal says there is no such workflow). */
export async function paymentWorkflowExists(client: Client, paymentId: string): Promise<boolean> {
  try {
    await describePayment(client, paymentId);
    return true;
  } catch (err) {
    return !isNotFound(err);
  }
}

/** A running payment workflow whose search attributes say PROCESSING. */
export interface ProcessingWorkflow {
  paymentId: string;
  accountId?: string;
  environment?: Environment;
  providerConfigId?: string;
  workflowId: string;
  startTime: Date;
}

/** The running payment workflows in PROCESSING (Temporal visibility), of one account or all; at most `max`. */
export async function* processingPaymentWorkflows(client: Client, filter: { accountId?: string; max: number }): AsyncGenerator<ProcessingWorkflow> {
  const query = `PaymentStatus="PROCESSING" AND ExecutionStatus="Running"${filter.accountId ? ` AND AccountId="${filter.accountId}"` : ''}`;
  let seen = 0;
  for await (const wf of client.workflow.list({ query })) {
    if (++seen > filter.max) return;
    const attributes = wf.typedSearchAttributes;
    const environment = attributes.get(SEARCH_ATTRIBUTES.Environment);
    yield {
      paymentId: attributes.get(SEARCH_ATTRIBUTES.PaymentId) ?? wf.workflowId.replace(/^payment\//, ''),
      accountId: attributes.get(SEARCH_ATTRIBUTES.AccountId),
      environment: environment === 'production' || environment === 'sandbox' ? environment : undefined,
      providerConfigId: attributes.get(SEARCH_ATTRIBUTES.ProviderConfigId),
      workflowId: wf.workflowId,
      startTime: wf.startTime,
    };
  }
}
