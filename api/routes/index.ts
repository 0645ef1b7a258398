import type { Route } from '../route';
import { accountRoutes } from './accounts';
import { paymentProviderRoutes } from './payment-providers';
import { providerConfigRoutes } from './provider-configs';
import { routingPlanRoutes } from './routing-plans';
import { routingSettingsRoutes } from './routing-settings';
import { analyticsRoutes } from './analytics';
import { customerRoutes } from './customers';
import { apiKeyRoutes } from './api-keys';
import { membershipRoutes } from './memberships';
import { notificationRoutes } from './notifications';
import { webhookRoutes } from './webhooks';
import { webhookDeliveryRoutes } from './webhook-deliveries';
import { paymentRoutes } from './payments';
import { eventRoutes } from './events';
import { refundRoutes } from './refunds';
import { checkoutSessionRoutes } from './checkout-sessions';
import { paymentLinkRoutes } from './payment-links';
import { auditEventRoutes } from './audit-events';
import { productRoutes } from './products';
import { priceRoutes } from './prices';
import { subscriptionRoutes } from './subscriptions';
import { invoiceRoutes } from './invoices';
import { testClockRoutes } from './test-clocks';
import { billingSettingsRoutes } from './billing-settings';
import { disputeRoutes } from './disputes';

/** Every /v1 route. Adding a module here puts its routes on the server and in the OpenAPI document. */
export const ROUTES: Route[] = [
  ...accountRoutes,
  ...billingSettingsRoutes,
  ...customerRoutes,
  ...apiKeyRoutes,
  ...membershipRoutes,
  ...notificationRoutes,
  ...paymentProviderRoutes,
  ...providerConfigRoutes,
  ...routingPlanRoutes,
  ...routingSettingsRoutes,
  ...analyticsRoutes,
  ...webhookRoutes,
  ...webhookDeliveryRoutes,
  ...paymentRoutes,
  ...eventRoutes,
  ...refundRoutes,
  ...disputeRoutes,
  ...checkoutSessionRoutes,
  ...paymentLinkRoutes,
  ...auditEventRoutes,
  ...productRoutes,
  ...priceRoutes,
  ...subscriptionRoutes,
  ...invoiceRoutes,
  ...testClockRoutes,
];
