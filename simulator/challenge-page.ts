// The 3-D Secure challenge pages the cardholder's browser sees: plain HTML, no scripts or external
// assets, stable element ids for browser tests. Everything echoed is escaped.

import type { Challenge } from './challenges';

const STATE_TEXT: Readonly<Record<Challenge['state'], string>> = {
  pending: 'waiting for the cardholder',
  approved: 'authenticated',
  failed: 'authentication failed',
  canceled: 'canceled by the merchant',
};

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);
}

/** An amount in minor units as people read it: 12345 USD → "123.45 USD", 500 JPY → "500 JPY". */
export function displayAmount(amount: number, currency: string): string {
  let digits = 2;
  try {
    digits = new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ?? 2;
  } catch {
    // A code Intl does not know: two decimals, as most currencies have.
  }
  return `${(amount / 10 ** digits).toFixed(digits)} ${currency}`;
}

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>
  body { font-family: system-ui, sans-serif; max-width: 28rem; margin: 3rem auto; padding: 0 1rem; color: #1f2328; }
  h1 { font-size: 1.25rem; }
  dl { display: grid; grid-template-columns: auto 1fr; gap: .25rem 1rem; }
  dt { color: #59636e; }
  button { font: inherit; padding: .5rem 1.25rem; margin-right: .5rem; cursor: pointer; }
</style>
</head>
<body>
${body}
</body>
</html>
`;
}

/** The challenge: what is being paid, and one form with the cardholder's two answers. */
export function challengePage(challenge: Challenge): string {
  const details = `<h1>Sandbox 3-D Secure</h1>
<p>The sandbox processor's stand-in for the card issuer's authentication page.</p>
<dl>
  <dt>Amount</dt><dd id="amount">${escapeHtml(displayAmount(challenge.amount, challenge.currency))}</dd>
  <dt>Card</dt><dd id="card">•••• ${escapeHtml(challenge.last4)}</dd>
  <dt>Status</dt><dd id="state">${escapeHtml(STATE_TEXT[challenge.state])}</dd>
</dl>`;
  if (challenge.state !== 'pending') return page('Sandbox 3-D Secure', `${details}\n<p id="over">This authentication is over.</p>`);
  // The action is relative: it resolves to this page's own URL, wherever the simulator is published.
  return page('Sandbox 3-D Secure', `${details}
<form id="challenge" method="post" action="${escapeHtml(encodeURIComponent(challenge.id))}">
  <button type="submit" id="complete" name="action" value="approve">Complete</button>
  <button type="submit" id="fail" name="action" value="fail">Fail</button>
</form>`);
}

/** Where a browser lands after the challenge when the authorization gave no return_url. */
export function completedPage(challenge: Challenge): string {
  return page('Authentication complete', `<h1 id="done">Authentication complete — you can close this window</h1>
<p>Result: <span id="state">${escapeHtml(STATE_TEXT[challenge.state])}</span></p>`);
}

/** A page that only says what went wrong (an unknown challenge, an answer that is neither approve nor fail). */
export function errorPage(message: string): string {
  return page(message, `<h1 id="error">${escapeHtml(message)}</h1>`);
}
