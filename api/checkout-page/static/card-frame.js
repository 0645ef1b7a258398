/*
 * The card fields' frame (served from Switchboard's origin, mounted by switchboard.js). It holds the
 * inputs and confirms the payment itself, with the publishable key and the payment's client_secret the
 * page hands it: the card goes from here to Switchboard's API and nowhere else. The page gets back only
 * the payment as a publishable key sees it, or an error { code, message }.
 */
(function () {
  'use strict';

  var PREFIX = 'switchboard:';
  var MESSAGES = {
    card_declined: 'Your card was declined.',
    too_many_attempts: 'This payment cannot be attempted again.',
    too_many_declines: 'Too many declined attempts. Please try again later.',
    authentication_failed: 'Your bank could not confirm this payment.',
  };

  // The embedding page's origin, as switchboard.js wrote it; where the browser tells the real one
  // (Chromium, Safari), it must be the same, or this frame talks to no one.
  var parentOrigin = decodeURIComponent(location.hash.slice(1));
  var ancestors = location.ancestorOrigins;
  if (ancestors && ancestors.length && ancestors[0] !== parentOrigin) parentOrigin = '';
  if (window.parent === window || !/^https?:\/\/[^/]+$/.test(parentOrigin)) return;

  var inputs = {
    number: document.getElementById('number'),
    expiry: document.getElementById('expiry'),
    cvc: document.getElementById('cvc'),
    name: document.getElementById('name'),
  };
  var busy = false;

  function tell(message) {
    window.parent.postMessage(message, parentOrigin);
  }

  function luhn(digits) {
    var sum = 0;
    for (var i = 0; i < digits.length; i += 1) {
      var d = digits.charCodeAt(digits.length - 1 - i) - 48;
      if (i % 2 === 1) { d *= 2; if (d > 9) d -= 9; }
      sum += d;
    }
    return sum % 10 === 0;
  }

  function showError(field, message) {
    var input = inputs[field];
    var note = document.getElementById(field + '-error');
    if (message) input.setAttribute('aria-invalid', 'true');
    else input.removeAttribute('aria-invalid');
    if (note) { note.textContent = message || ''; note.hidden = !message; }
  }

  /** The card as typed, or the first problem (each field's shown beside it). The API checks it again. */
  function readCard() {
    var number = inputs.number.value.replace(/[\s-]/g, '');
    var expiry = /^\s*(\d{1,2})\s*[/-]?\s*(\d{2}|\d{4})\s*$/.exec(inputs.expiry.value);
    var cvc = inputs.cvc.value.trim();
    var now = new Date();
    var problems = {};
    if (!/^\d{12,19}$/.test(number) || !luhn(number)) problems.number = 'Enter a valid card number.';
    if (!expiry || Number(expiry[1]) < 1 || Number(expiry[1]) > 12) {
      problems.expiry = 'Enter the expiry date as MM / YY.';
    } else {
      var year = Number(expiry[2]) < 100 ? 2000 + Number(expiry[2]) : Number(expiry[2]);
      var month = Number(expiry[1]);
      if (year < now.getUTCFullYear() || (year === now.getUTCFullYear() && month < now.getUTCMonth() + 1)) problems.expiry = 'Your card has expired.';
    }
    if (!/^\d{3,4}$/.test(cvc)) problems.cvc = 'Enter the security code.';
    ['number', 'expiry', 'cvc'].forEach(function (field) { showError(field, problems[field]); });
    var first = ['number', 'expiry', 'cvc'].filter(function (field) { return problems[field]; })[0];
    if (first) {
      inputs[first].focus();
      return { error: { code: 'invalid_card', message: problems[first] } };
    }
    var card = { number: number, exp_month: Number(expiry[1]), exp_year: Number(expiry[2]), cvc: cvc };
    var name = inputs.name.value.trim();
    if (name) card.holder_name = name.slice(0, 200);
    return { card: card };
  }

  /** The API's answer as the page receives it: the payment, and for a decline an error too. */
  function resultOf(status, body) {
    if (status >= 200 && status < 300 && body && body.data) {
      var payment = body.data;
      if (payment.status !== 'FAILED') return { payment: payment };
      var code = (payment.last_error && payment.last_error.code) || 'card_declined';
      return { payment: payment, error: { code: code, message: MESSAGES[code] || MESSAGES.card_declined } };
    }
    var error = (body && body.error) || {};
    var reason = (error.details && error.details.reason) || 'api_error';
    (error.details && error.details.fields || []).forEach(function (f) {
      var field = f && typeof f.path === 'string' ? f.path.split('/').pop() : '';
      if (field === 'exp_month' || field === 'exp_year') field = 'expiry';
      if (inputs[field] && field !== 'name') showError(field, f.message);
    });
    return { error: { code: reason, message: MESSAGES[reason] || error.message || 'The payment could not be confirmed.' } };
  }

  function confirm(request) {
    if (busy) return Promise.resolve({ error: { code: 'in_progress', message: 'The payment is already being confirmed.' } });
    var read = readCard();
    if (read.error) return Promise.resolve(read);
    busy = true;
    var body = { client_secret: request.clientSecret, payment_method: { type: 'CARD', card: read.card } };
    if (request.returnUrl) body.return_url = request.returnUrl;
    return fetch('/v1/payments/' + encodeURIComponent(request.paymentId) + '/confirm', {
      method: 'POST',
      headers: { 'Authorization': 'Bearer ' + request.publishableKey, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
      credentials: 'omit',
    }).then(function (res) {
      return res.json().catch(function () { return null; }).then(function (json) { return resultOf(res.status, json); });
    }, function () {
      return { error: { code: 'network_error', message: 'The payment could not reach Switchboard. Check your connection and try again.' } };
    }).then(function (result) {
      busy = false;
      // A paid (or paying) card is not typed into again.
      if (result.payment && result.payment.status !== 'FAILED') {
        Object.keys(inputs).forEach(function (field) { inputs[field].disabled = true; });
      }
      return result;
    });
  }

  window.addEventListener('message', function (event) {
    // Only the page that embeds this frame, at the origin it was mounted for.
    if (event.source !== window.parent || event.origin !== parentOrigin) return;
    var data = event.data || {};
    if (data.type !== PREFIX + 'confirm') return;
    confirm(data).then(function (result) {
      tell({ type: PREFIX + 'result', requestId: data.requestId, result: result });
    });
  });

  function reportHeight() {
    tell({ type: PREFIX + 'resize', height: document.documentElement.scrollHeight });
  }
  if (typeof ResizeObserver === 'function') new ResizeObserver(reportHeight).observe(document.body);
  reportHeight();
  tell({ type: PREFIX + 'ready' });
})();
