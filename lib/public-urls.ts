// The addresses the world reaches Switchboard at, built from PUBLIC_URL (no trailing slash): where
// processors post a config's notifications, and where a customer comes back after authenticating.

/** POST target of a provider config's processor notifications (its `webhook_url`). */
export function providerWebhookUrl(publicUrl: string, configId: string): string {
  return `${publicUrl}/v1/provider-webhooks/${encodeURIComponent(configId)}`;
}

/** Where the processor sends the customer's browser back after 3-D Secure, for one charge of a payment. */
export function authenticationReturnUrl(publicUrl: string, paymentId: string, chargeId: string): string {
  return `${publicUrl}/v1/payments/${encodeURIComponent(paymentId)}/authentication-return?charge=${encodeURIComponent(chargeId)}`;
}
