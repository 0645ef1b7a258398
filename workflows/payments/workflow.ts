import { setHandler } from '@temporalio/workflow';
import { paymentQueries, paymentSignals, paymentUpdates, type PaymentInput, type PaymentState } from '../../contracts/payments';
import { PaymentMachine } from './machine';

/**
 * One workflow per payment (`payment/<pay_id>`). It writes the payment row first (answering the
 * `create` update sent with the start), then serves confirm, capture and cancel as updates whose
 * validators reject a wrong state before anything is written. Confirm walks the routing plan: one
 * charge per attempt, the cascade rule deciding what follows each; unknown outcomes are reconciled with
 * the provider and never cascaded. Durable timers void a stale authorization and cancel a payment that
 * never succeeded. The state and every step live in PaymentMachine (machine.ts); each handler here
 * delegates to it in one line.
 */
export async function paymentWorkflow(input: PaymentInput): Promise<PaymentState> {
  const machine = new PaymentMachine(input);
  setHandler(paymentQueries.state, () => machine.state());
  setHandler(paymentSignals.providerEvent, (event) => machine.providerEvent(event));
  // Registered before the loop starts: the `create` sent with the start runs first.
  setHandler(paymentUpdates.create, (args) => machine.create(args));
  setHandler(paymentUpdates.confirm, (args) => machine.confirm(args), { validator: (_args) => machine.validateConfirm() });
  setHandler(paymentUpdates.capture, (args) => machine.capture(args), { validator: (args) => machine.validateCapture(args) });
  setHandler(paymentUpdates.cancel, (args) => machine.cancel(args), { validator: (_args) => machine.validateCancel() });
  setHandler(paymentUpdates.authenticationReturn, async (args) => machine.authenticationReturn(args), {
    validator: (args) => machine.validateAuthenticationReturn(args),
  });
  return machine.run();
}
