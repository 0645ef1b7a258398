// The hosted checkout page works without this script; with it, the Pay button cannot be pressed twice
// while the first payment is on its way.
'use strict';
(function () {
  var form = document.getElementById('card-form');
  var button = document.getElementById('pay');
  if (!form || !button) return;
  form.addEventListener('submit', function () {
    // Disabled after the submission has started, so the button's own value is not lost from it.
    setTimeout(function () { button.disabled = true; button.textContent = 'Processing…'; }, 0);
  });
})();
