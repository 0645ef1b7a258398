// Every workflow the worker runs. This module is bundled for the Temporal sandbox.
export { apiKeyRotationWorkflow } from './api-key-rotation';
export { webhookDeliveryWorkflow } from './webhook-delivery';
export { webhookVerificationWorkflow } from './webhook-verification';
export { webhookSecretRotationWorkflow } from './webhook-secret-rotation';
export { webhookFanOutWorkflow } from './webhook-fan-out';
export { paymentWorkflow } from './payment';
export { refundWorkflow } from './refund';
export { stuckPaymentWatchdogWorkflow } from './stuck-payment-watchdog';
