import { getExternalWorkflowHandle, log } from '@temporalio/workflow';
import { subscriptionSignals, subscriptionWorkflowId } from '../../contracts/billing';
import type { PaymentCore } from './core';

/**
 * Tells the subscription whose invoice this payment pays that a walk ended (paid, failed, or waiting for
 * the customer), so that it settles the invoice now. Only a nudge: the subscription reads the payment's
 * row. Never fails; the workflow awaits it before it ends, as a signal still pending at close is dropped.
 */
export function tellInvoiceSubscription(core: PaymentCore): Promise<void> | undefined {
  const invoice = core.input.invoice;
  if (!invoice) return undefined;
  return getExternalWorkflowHandle(subscriptionWorkflowId(invoice.subscriptionId))
    .signal(subscriptionSignals.invoicePayment, { invoiceId: invoice.invoiceId, paymentId: core.input.paymentId, status: core.status })
    .catch((err: unknown) => log.warn('the invoice\'s subscription was not told how its payment went', { paymentId: core.input.paymentId, error: String(err) }));
}
