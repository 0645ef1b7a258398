/**
 * Names shared by the API (client side) and the workflows: task queues and search attributes.
 * Imported by both, so it stays free of Node and I/O.
 */
// Moving to workflows/contract.ts and workflows/<feature>/contract.ts (docs/architecture.md).
export { TASK_QUEUES, SEARCH_ATTRIBUTES } from './contract';
export type { Actor, Environment, RequestContext } from './contract';

// Payments: moved to workflows/payments/contract.ts; re-exported until the last importers switch.
export {
  paymentQueries, paymentUpdates, paymentWorkflowId,
} from './payments/contract';
export type {
  AttemptSummary, CancelInput, CaptureInput, CommandResult, ConfirmInput, CreateInput, PaymentInput, PaymentState, PaymentStatus,
  RoutingHintsInput,
} from './payments/contract';
