import { ApplicationFailure, Context } from '@temporalio/activity';
import { logger } from '../../lib/logger';
import type { Vault } from '../../lib/vault';
import {
  PAYMENT_SEAL_PURPOSE, paymentCommand, paymentWorkflowId, UNSEALED_COMMAND,
  type CancelArgs, type CaptureArgs, type PaymentCommand, type PaymentInput, type PlanArgs,
} from '../../workflows/payments/contract';

/**
 * The checks of what the API sealed into a payment's commands (workflows/payments/contract.ts,
 * docs/security.md §16), made by the activity that acts on each before it writes or calls a processor:
 * a workflow started or updated by anyone else who reaches Temporal is refused (`unsealed_command`,
 * non-retryable) and moves nothing. Each also runs only in the payment's own workflow (`payment/<id>`),
 * so a sealed start copied from one history into another workflow is refused as well.
 */
export interface CommandSeals {
  start(input: PaymentInput): void;
  confirm(args: PlanArgs): void;
  capture(args: CaptureArgs): void;
  /** A cancel by its update (`command`); the workflow's own expiry sends none and needs none. */
  cancel(args: Pick<CancelArgs, 'paymentId' | 'environment' | 'command'>): void;
}

export function commandSeals(vault: Vault): CommandSeals {
  const check = (command: PaymentCommand, environment: string, seal: string | undefined) => {
    if (vault.sealed(PAYMENT_SEAL_PURPOSE, paymentCommand(command), seal) && inOwnWorkflow(command.paymentId)) return;
    logger.warn({ environment, payment_id: command.paymentId.slice(0, 64), command: command.kind }, 'payment command refused: not sealed by the API');
    throw ApplicationFailure.nonRetryable(`the payment's ${command.kind} was not sent by the API (no valid seal)`, UNSEALED_COMMAND);
  };
  return {
    start: (input) => check({
      kind: 'start', paymentId: input.paymentId, accountId: input.accountId, workspaceId: input.workspaceId, environment: input.environment,
      customerId: input.customerId, amount: input.amount, currency: input.currency, autoCapture: input.autoCapture,
    }, input.environment, input.seal),
    confirm: (args) => check({
      kind: 'confirm', paymentId: args.paymentId, paymentMethodId: args.paymentMethodId, returnUrl: args.returnUrl, installments: args.installments, routing: args.routing,
    }, args.environment, args.seal),
    capture: (args) => check({ kind: 'capture', paymentId: args.paymentId, amount: args.command?.amount }, args.environment, args.command?.seal),
    cancel: (args) => {
      if (args.command) check({ kind: 'cancel', paymentId: args.paymentId, reason: args.command.reason }, args.environment, args.command.seal);
    },
  };
}

/** Whether the running activity belongs to the payment's own workflow (true outside an activity: a test calling it directly). */
function inOwnWorkflow(paymentId: string): boolean {
  let context: Context;
  try {
    context = Context.current();
  } catch {
    return true;
  }
  return context.info.workflowExecution?.workflowId === paymentWorkflowId(paymentId);
}
