// Every workflow the worker runs. This module is bundled for the Temporal sandbox.
export { apiKeyRotationWorkflow } from './api-keys/workflow';
export { webhookDeliveryWorkflow } from './webhooks/delivery';
export { webhookVerificationWorkflow } from './webhooks/verification';
export { webhookSecretRotationWorkflow } from './webhooks/secret-rotation';
export { paymentWorkflow } from './payments/workflow';
export { refundWorkflow } from './refunds/workflow';
export { checkoutSessionWorkflow } from './checkout/workflow';
export { subscriptionWorkflow } from './billing/workflow';
export { clockAdvanceWorkflow } from './billing/test-clock';
export { disputeWorkflow } from './disputes/workflow';
export { stuckPaymentWatchdogWorkflow } from './watchdog/workflow';
export { vaultRotationWorkflow } from './vault/workflow';
