import { Type } from '@sinclair/typebox';
import { findPaymentLink, insertPaymentLink, listPaymentLinks, setPaymentLinkActive } from '../../db/payment-links';
import { newUnguessableId } from '../../lib/ids';
import { reserveResourceId } from '../middleware/idempotency';
import { listStart, paginationError } from '../pagination';
import { defineRoute } from '../route';
import { PaymentLinkSchema, serializePaymentLink } from '../../resources/payment-links';
import { Amount, Currency, ExactlyOne, Id, Metadata, Obj, Pagination, RequiredWith } from '../../resources/schemas';
import { findVisible } from './environment-lookup';
import { checkRedirectUrl, LineItemsBody, RedirectUrl, sessionAmount } from './checkout-open';

const TAG = 'Payment links';

const Params = Obj({ id: Type.String({ minLength: 1, maxLength: 100 }) });

export const paymentLinkRoutes = [
  defineRoute({
    method: 'post',
    path: '/payment-links',
    tag: TAG,
    summary: 'Create a payment link: a reusable URL whose every visit opens a new checkout session for its items',
    permission: 'checkout:write',
    status: 201,
    message: 'Payment link created',
    errors: ['amount_too_large'],
    body: Obj({
      amount: Type.Optional(Amount),
      currency: Type.Optional(Currency),
      line_items: Type.Optional(LineItemsBody),
      success_url: Type.Optional(RedirectUrl('where each session\'s customer is sent once paid, with session_id=<id> appended (none: the hosted page thanks them)')),
      metadata: Type.Optional(Metadata),
    }, { allOf: [ExactlyOne('amount', 'line_items'), RequiredWith('currency', 'amount')] }),
    response: PaymentLinkSchema,
    async handler({ body, access, deps, ctx }) {
      const scope = await access.forAccount();
      const env = scope.environment;
      const { amount, currency, lineItems } = sessionAmount(body, scope.account.currency);
      await checkRedirectUrl(deps, scope.account.id, env, 'success_url', body.success_url);
      const id = await reserveResourceId(ctx, newUnguessableId('plink'));
      const row = await insertPaymentLink(deps.db, env, {
        id, account_id: scope.account.id, amount, currency, line_items: lineItems, success_url: body.success_url ?? null, metadata: body.metadata ?? {},
      });
      return { data: serializePaymentLink(row, deps.config.publicUrl) };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/payment-links',
    tag: TAG,
    summary: 'List payment links, newest first',
    permission: 'checkout:read',
    errors: ['invalid_pagination'],
    envelope: 'paginated',
    message: 'Payment links retrieved',
    query: Obj({
      ...Pagination,
      starting_after: Type.Optional({ ...Id('plink'), description: 'A link of this list: the page of links right after it (older), for the next page.' }),
      ending_before: Type.Optional({ ...Id('plink'), description: 'A link of this list: the page of links right before it (newer), for the previous page.' }),
      active: Type.Optional(Type.Boolean()),
    }),
    response: Type.Array(PaymentLinkSchema),
    async handler({ query, access, deps }) {
      const scope = await access.forAccount();
      const start = listStart(query);
      const listed = await listPaymentLinks(deps.db, scope.environment, scope.account.id, { active: query.active }, start, query.limit ?? 10);
      if (!listed) throw paginationError(`query/${'startingAfter' in start ? 'starting_after' : 'ending_before'}`, 'no such payment link in this account');
      return {
        data: listed.rows.map((row) => serializePaymentLink(row, deps.config.publicUrl)),
        total: listed.total,
        hasMore: listed.hasMore,
        ...('page' in start ? {} : { page: null }),
      };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/payment-links/:id',
    tag: TAG,
    summary: 'Get one payment link',
    permission: 'checkout:read',
    message: 'Payment link retrieved',
    params: Params,
    response: PaymentLinkSchema,
    async handler({ params, access, deps }) {
      const { row } = await findVisible(access, 'payment link', (env) => findPaymentLink(deps.db, env, params.id));
      return { data: serializePaymentLink(row, deps.config.publicUrl) };
    },
  }),

  defineRoute({
    method: 'patch',
    path: '/payment-links/:id',
    tag: TAG,
    summary: 'Turn a payment link off (its url then answers 410) or on again',
    permission: 'checkout:write',
    message: 'Payment link updated',
    params: Params,
    body: Obj({ active: Type.Boolean() }),
    response: PaymentLinkSchema,
    async handler({ params, body, access, deps }) {
      const { row, env } = await findVisible(access, 'payment link', (e) => findPaymentLink(deps.db, e, params.id));
      const updated = await setPaymentLinkActive(deps.db, env, row.id, body.active);
      return { data: serializePaymentLink(updated ?? row, deps.config.publicUrl) };
    },
  }),
];
