import { ApplicationFailure, Context } from '@temporalio/activity';
import { logger } from '../../lib/logger';
import type { Vault } from '../../lib/vault';
import {
  openCarriedSeal, PAYMENT_SEAL_PURPOSE, paymentCommand, paymentWorkflowId, startCommand, UNSEALED_COMMAND,
  type CancelArgs, type CaptureArgs, type PaymentCommand, type PaymentInput, type PlanArgs,
} from '../../contracts/payments';

/**
 * The checks of what the API sealed into a payment's commands (contracts/payments.ts,
 * docs/security.md §16), made by the activity that acts on each before it writes or calls a processor:
 * a workflow started or updated by anyone else who reaches Temporal is refused (`unsealed_command`,
 * non-retryable) and moves nothing. Each also runs only in the payment's own workflow (`payment/<id>`),
 * so a sealed start copied from one history into another workflow is refused as well. A confirm's and
 * a capture's check answers its one-time command id, for the activity to refuse once it is used.
 */
export interface CommandSeals {
  start(input: PaymentInput): void;
  /** The confirm's command id. */
  confirm(args: PlanArgs): string;
  /** The capture's command id. */
  capture(args: CaptureArgs): string;
  /** A cancel by its update (`command`); the workflow's own expiry sends none and needs none. */
  cancel(args: Pick<CancelArgs, 'paymentId' | 'environment' | 'command'>): void;
}

/** Refuses a payment's command for good (`unsealed_command`): logged without the seal, nothing written or sent. */
export function refuseCommand(environment: string, paymentId: string, kind: PaymentCommand['kind'], why: string): never {
  logger.warn({ environment, payment_id: paymentId.slice(0, 64), command: kind, why }, 'payment command refused');
  throw ApplicationFailure.nonRetryable(`the payment's ${kind} was refused: ${why}`, UNSEALED_COMMAND);
}

export function commandSeals(vault: Vault): CommandSeals {
  const check = (command: PaymentCommand, environment: string, seal: string | undefined) => {
    if (vault.sealed(PAYMENT_SEAL_PURPOSE, paymentCommand(command), seal) && inOwnWorkflow(command.paymentId)) return;
    refuseCommand(environment, command.paymentId, command.kind, 'not sent by the API (no valid seal)');
  };
  return {
    start: (input) => check(startCommand(input), input.environment, input.seal),
    confirm: (args) => {
      const { commandId, seal } = openCarriedSeal(args.seal);
      check({
        kind: 'confirm', paymentId: args.paymentId, commandId, paymentMethodId: args.paymentMethodId, returnUrl: args.returnUrl,
        installments: args.installments, routing: args.routing,
      }, args.environment, seal);
      return commandId;
    },
    capture: (args) => {
      const { commandId, seal } = openCarriedSeal(args.command?.seal);
      check({ kind: 'capture', paymentId: args.paymentId, commandId, amount: args.command?.amount }, args.environment, seal);
      return commandId;
    },
    cancel: (args) => {
      if (args.command) check({ kind: 'cancel', paymentId: args.paymentId, reason: args.command.reason }, args.environment, args.command.seal);
    },
  };
}

/** The running activity's workflow run id (undefined outside an activity: a test calling it directly). */
export function currentRunId(): string | undefined {
  try {
    return Context.current().info.workflowExecution?.runId;
  } catch {
    return undefined;
  }
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
