/*
 * Switchboard card fields (docs/checkout.md). On the merchant's page:
 *
 *   const sb = Switchboard('pk_…');
 *   const card = sb.mountCard('#card');
 *   const { payment, error } = await sb.confirmCardPayment(clientSecret, { card, return_url });
 *
 * The card's inputs live in an iframe served from Switchboard's own origin (the origin this script was
 * loaded from), and that frame confirms the payment itself: the card number never reaches this page or
 * the merchant's server. This page only ever receives the payment as a publishable key sees it, or an
 * error { code, message }. Messages are checked both ways: origin and window.
 */
(function (global) {
  'use strict';

  var script = document.currentScript;
  var ORIGIN = new URL(script && script.src ? script.src : '/', location.href).origin;
  var FRAME_PATH = '/js/v1/card-frame.html';
  var PREFIX = 'switchboard:';

  function Switchboard(publishableKey) {
    if (typeof publishableKey !== 'string' || publishableKey.indexOf('pk_') !== 0) {
      // A secret key in a browser is a leak: refuse it loudly rather than use it.
      throw new Error('Switchboard(): give your publishable key (pk_…), never a secret key.');
    }
    if (!(this instanceof Switchboard)) return new Switchboard(publishableKey);
    this._key = publishableKey;
  }

  /** Mounts the card fields into `target` (an element or a selector); returns the card to confirm with. */
  Switchboard.prototype.mountCard = function (target) {
    var host = typeof target === 'string' ? document.querySelector(target) : target;
    if (!host || typeof host.appendChild !== 'function') throw new Error('Switchboard.mountCard(): no element matches ' + String(target));
    return new CardFields(host);
  };

  /**
   * Confirms the payment `clientSecret` names with the card typed into `options.card`. Resolves to
   * { payment } or { error: { code, message } } (a decline gives both); never rejects. A payment that
   * waits for 3-D Secure sends the browser to the bank, which sends it back to `options.return_url`.
   */
  Switchboard.prototype.confirmCardPayment = function (clientSecret, options) {
    var key = this._key;
    var card = options && options.card;
    if (!(card instanceof CardFields)) return Promise.resolve(failure('invalid_request', 'confirmCardPayment(): options.card must be what mountCard() returned.'));
    var cut = typeof clientSecret === 'string' ? clientSecret.indexOf('_secret_') : -1;
    if (cut <= 0) return Promise.resolve(failure('invalid_request', 'confirmCardPayment(): give the payment\'s client_secret.'));
    return card._ask({
      type: PREFIX + 'confirm',
      publishableKey: key,
      paymentId: clientSecret.slice(0, cut),
      clientSecret: clientSecret,
      returnUrl: options.return_url || null,
    }).then(function (result) {
      var next = result.payment && result.payment.status === 'REQUIRES_ACTION' && result.payment.next_action;
      if (next && next.redirect_to_url && next.redirect_to_url.url) goTo(next.redirect_to_url.url);
      return result;
    });
  };

  function failure(code, message) {
    return { error: { code: code, message: message } };
  }

  /** Sends the top window to the bank's page (this page's own window, if the top one is another origin's). */
  function goTo(url) {
    try {
      global.top.location.assign(url);
    } catch (err) {
      global.location.assign(url);
    }
  }

  /** One mounted card frame: its iframe, and the answers it owes. */
  function CardFields(host) {
    var self = this;
    this._waiting = {};
    this._next = 1;
    this._frame = document.createElement('iframe');
    this._frame.src = ORIGIN + FRAME_PATH + '#' + encodeURIComponent(location.origin);
    this._frame.title = 'Secure card payment input';
    this._frame.setAttribute('scrolling', 'no');
    this._frame.style.border = '0';
    this._frame.style.width = '100%';
    this._frame.style.height = '200px';
    this._frame.style.display = 'block';
    this._frame.style.overflow = 'hidden';
    this._ready = new Promise(function (resolve) { self._onReady = resolve; });
    global.addEventListener('message', function (event) { self._receive(event); });
    host.appendChild(this._frame);
  }

  CardFields.prototype._receive = function (event) {
    // Only our own frame, from Switchboard's origin, is listened to.
    if (event.origin !== ORIGIN || event.source !== this._frame.contentWindow) return;
    var data = event.data || {};
    if (data.type === PREFIX + 'ready') this._onReady();
    else if (data.type === PREFIX + 'resize' && typeof data.height === 'number') this._frame.style.height = Math.ceil(data.height) + 'px';
    else if (data.type === PREFIX + 'result' && this._waiting[data.requestId]) {
      var resolve = this._waiting[data.requestId];
      delete this._waiting[data.requestId];
      resolve(data.result || failure('internal_error', 'The card fields gave no answer.'));
    }
  };

  CardFields.prototype._ask = function (message) {
    var self = this;
    return this._ready.then(function () {
      return new Promise(function (resolve) {
        message.requestId = self._next++;
        self._waiting[message.requestId] = resolve;
        self._frame.contentWindow.postMessage(message, ORIGIN);
      });
    });
  };

  /** Takes the frame off the page. */
  CardFields.prototype.unmount = function () {
    if (this._frame.parentNode) this._frame.parentNode.removeChild(this._frame);
  };

  global.Switchboard = Switchboard;
})(window);
