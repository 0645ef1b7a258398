import type Koa from 'koa';
import type { ApiDeps } from '../deps';
import { isAsset, serveAsset } from './assets';
import { hostedCheckoutPage } from './hosted-page';

/**
 * What a customer's browser loads from Switchboard to pay (docs/checkout.md): the hosted checkout page
 * (`/checkout/{id}`), its stylesheet and script (`/checkout/assets/…`), and the card fields a merchant's
 * own page embeds (`/js/v1/switchboard.js` and its frame). No credentials: before the JSON body parser.
 */
export function checkoutPages(deps: ApiDeps, pageRequestsPerIpPerMinute?: number): Koa.Middleware {
  const page = hostedCheckoutPage(deps, pageRequestsPerIpPerMinute);
  return (ctx, next) => {
    if (isAsset(ctx.path)) {
      serveAsset(ctx);
      return Promise.resolve();
    }
    return page(ctx, next);
  };
}
