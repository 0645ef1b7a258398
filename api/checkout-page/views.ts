import { formatMoney } from '../../lib/money';
import { escapeHtml as e, htmlDocument } from './html';
import type { CardField } from './card-form';

// The hosted checkout page in each of its states, as HTML. Pure: a view of the session in, a page out.
// Every value that comes from the merchant or the customer is escaped here, where it is written.

export interface LineItem { name: string; quantity: number; unit_amount: number }

/** What every state of the page shows of its session. */
export interface CheckoutView {
  sessionId: string;
  merchantName: string;
  /** A sandbox session: the page says that no real money moves. */
  testMode: boolean;
  amount: number;
  currency: string;
  lineItems: LineItem[];
  cancelUrl: string | null;
}

/** The form as it is shown again: a message above it, an error per field, and the values it may echo. */
export interface FormState {
  message?: string;
  errors?: Partial<Record<CardField, string>>;
  /** Only what is safe to show again: never the card number or the CVC. */
  values?: { expiry?: string; name?: string };
}

const pathOf = (view: CheckoutView) => `/checkout/${encodeURIComponent(view.sessionId)}`;

function header(view: CheckoutView): string {
  const badge = view.testMode ? '<span class="badge" id="test-mode">Test mode</span>' : '';
  return `<header class="merchant"><span class="merchant-name" id="merchant-name">${e(view.merchantName)}</span>${badge}</header>`;
}

function summary(view: CheckoutView): string {
  const items = view.lineItems.map((item) => {
    const quantity = item.quantity > 1 ? ` <span class="quantity">× ${item.quantity}</span>` : '';
    return `<li><span class="item-name">${e(item.name)}${quantity}</span>`
      + `<span class="item-amount">${e(formatMoney(item.unit_amount * item.quantity, view.currency))}</span></li>`;
  }).join('');
  return '<section class="summary" aria-label="Order summary">'
    + `<p class="total-label">Total</p><p class="total" id="total">${e(formatMoney(view.amount, view.currency))}</p>`
    + (items ? `<ul class="items" id="line-items">${items}</ul>` : '')
    + '</section>';
}

function cancelLink(view: CheckoutView, text = `Cancel and return to ${view.merchantName}`): string {
  return view.cancelUrl ? `<p class="cancel"><a href="${e(view.cancelUrl)}" id="cancel">${e(text)}</a></p>` : '';
}

function frame(view: CheckoutView, title: string, panel: string, extra: Pick<Parameters<typeof htmlDocument>[0], 'refresh' | 'script'> = {}): string {
  const footer = '<footer class="footer">Payments by Switchboard</footer>';
  return htmlDocument({
    title: `${title} · ${view.merchantName}`,
    body: `<main class="checkout">${header(view)}${summary(view)}<section class="panel">${panel}</section>${footer}</main>`,
    ...extra,
  });
}

interface FieldSpec { id: CardField; label: string; autocomplete: string; inputmode?: string; placeholder?: string; optional?: boolean; value?: string }

function field(spec: FieldSpec, error: string | undefined): string {
  const optional = spec.optional ? ' <span class="optional">(optional)</span>' : '';
  const describedBy = error ? ` aria-invalid="true" aria-describedby="${spec.id}-error"` : '';
  const attrs = [
    `id="${spec.id}"`, `name="${spec.id}"`, 'type="text"', `autocomplete="${spec.autocomplete}"`,
    spec.inputmode ? `inputmode="${spec.inputmode}"` : '', spec.placeholder ? `placeholder="${e(spec.placeholder)}"` : '',
    spec.optional ? '' : 'required', spec.value ? `value="${e(spec.value)}"` : '',
  ].filter(Boolean).join(' ');
  return `<div class="field${error ? ' has-error' : ''}"><label for="${spec.id}">${e(spec.label)}${optional}</label>`
    + `<input ${attrs}${describedBy}>`
    + (error ? `<p class="field-error" id="${spec.id}-error">${e(error)}</p>` : '')
    + '</div>';
}

/** The open session: the card form, with the last decline or the fields' errors when there are any. */
export function formPage(view: CheckoutView, state: FormState = {}): string {
  const errors = state.errors ?? {};
  const message = state.message ? `<div class="alert" role="alert" id="message">${e(state.message)}</div>` : '';
  const form = `<form method="post" action="${pathOf(view)}" class="card-form" id="card-form" novalidate>`
    + field({ id: 'number', label: 'Card number', autocomplete: 'cc-number', inputmode: 'numeric', placeholder: '1234 1234 1234 1234' }, errors.number)
    + '<div class="row">'
    + field({ id: 'expiry', label: 'Expiry (MM / YY)', autocomplete: 'cc-exp', inputmode: 'numeric', placeholder: 'MM / YY', value: state.values?.expiry }, errors.expiry)
    + field({ id: 'cvc', label: 'CVC', autocomplete: 'cc-csc', inputmode: 'numeric', placeholder: '123' }, errors.cvc)
    + '</div>'
    + field({ id: 'name', label: 'Name on card', autocomplete: 'cc-name', optional: true, value: state.values?.name }, errors.name)
    + `<button type="submit" class="pay" id="pay">Pay ${e(formatMoney(view.amount, view.currency))}</button>`
    + '</form>';
  return frame(view, 'Checkout', `<h1>Pay with card</h1>${message}${form}${cancelLink(view)}`, { script: true });
}

/** The payment waits for the customer's bank (3-D Secure): off to its page, by itself or by the link. */
export function authenticatePage(view: CheckoutView, bankUrl: string): string {
  const panel = '<h1>Confirm with your bank</h1>'
    + '<p>Your bank asks you to confirm this payment. You are being taken to its page.</p>'
    + `<p><a class="button" href="${e(bankUrl)}" id="continue">Continue to your bank</a></p>`;
  return frame(view, 'Confirm with your bank', panel, { refresh: { seconds: 1, url: bankUrl } });
}

/** The payment is being processed: the page looks again by itself every few seconds. */
export function processingPage(view: CheckoutView): string {
  const panel = '<h1>Processing your payment</h1><p role="status">This takes a few seconds. This page updates by itself.</p>'
    + `<p><a href="${pathOf(view)}" id="refresh">Check again</a></p>`;
  return frame(view, 'Processing', panel, { refresh: { seconds: 2, url: pathOf(view) } });
}

/** Paid: on to the merchant's success page (for a browser that does not follow the redirect by itself). */
export function paidPage(view: CheckoutView, successUrl: string): string {
  const panel = '<h1>Payment complete</h1><p role="status">Thank you. You are being taken back to the shop.</p>'
    + `<p><a class="button" href="${e(successUrl)}" id="continue">Return to ${e(view.merchantName)}</a></p>`;
  return frame(view, 'Payment complete', panel, { refresh: { seconds: 0, url: successUrl } });
}

/** Paid, and the merchant gave no page to go back to. */
export function completePage(view: CheckoutView): string {
  return frame(view, 'Payment complete', '<h1>Payment complete</h1><p role="status" id="message">Thank you: your payment is complete. You can close this window.</p>');
}

/** The session is over without a payment: no form, ever. */
export function expiredPage(view: CheckoutView): string {
  const panel = '<h1>This checkout has expired</h1>'
    + '<p id="message">This payment page is no longer available, and nothing was charged. Return to the shop to start again.</p>';
  return frame(view, 'Checkout expired', panel + cancelLink(view, `Return to ${view.merchantName}`));
}

/** The payment takes no more attempts (too many failed ones): why, and the way back. */
export function closedPage(view: CheckoutView, message: string): string {
  return frame(view, 'Payment not possible', `<h1>Payment not possible</h1><div class="alert" role="alert" id="message">${e(message)}</div>${cancelLink(view, `Return to ${view.merchantName}`)}`);
}

/** A page for a URL that names no session, or for when the page cannot be served just now. */
export function plainPage(title: string, message: string): string {
  return htmlDocument({
    title,
    body: `<main class="checkout"><section class="panel"><h1>${e(title)}</h1><p id="message">${e(message)}</p></section></main>`,
  });
}
