import { Type } from '@sinclair/typebox';
import { findPrice, findProduct, insertPrice, listPrices, updatePrice } from '../../db/products';
import { newId } from '../../lib/ids';
import type { Interval } from '../../contracts/billing';
import { reserveResourceId } from '../middleware/idempotency';
import { ApiError } from '../errors';
import { listStart, paginationError } from '../pagination';
import { defineRoute } from '../route';
import { IntervalSchema, PriceSchema, serializePrice } from '../../resources/prices';
import { Amount, Currency, Id, Metadata, Obj, Pagination } from '../../resources/schemas';
import { findVisible } from './environment-lookup';

const TAG = 'Billing: prices';

const Params = Obj({ id: Type.String({ minLength: 1, maxLength: 100 }) });

/** The most intervals of each kind between two renewals: three years, as Stripe allows. */
export const MAX_INTERVAL_COUNT: Record<Interval, number> = { day: 365 * 3, week: 52 * 3, month: 12 * 3, year: 3 };

export const priceRoutes = [
  defineRoute({
    method: 'post',
    path: '/prices',
    tag: TAG,
    summary: 'Create a recurring price of an active product; its amount never changes (a new amount is a new price)',
    permission: 'billing:write',
    status: 201,
    message: 'Price created',
    body: Obj({
      product_id: Id('prod'),
      unit_amount: Amount,
      currency: Currency,
      recurring: Obj({
        interval: IntervalSchema,
        interval_count: Type.Optional(Type.Integer({
          minimum: 1, maximum: MAX_INTERVAL_COUNT.day,
          description: 'intervals between renewals (default 1); at most three years: 1095 days, 156 weeks, 36 months or 3 years',
        })),
      }),
      metadata: Type.Optional(Metadata),
    }),
    response: PriceSchema,
    async handler({ body, access, deps, ctx }) {
      const scope = await access.forAccount();
      const env = scope.environment;
      const product = await findProduct(deps.db, env, body.product_id);
      if (!product || product.account_id !== scope.account.id) throw ApiError.validation([{ path: 'body/product_id', message: 'is not a product of this account' }]);
      if (!product.active) throw ApiError.validation([{ path: 'body/product_id', message: 'is a retired product (active: false)' }]);
      const { interval } = body.recurring;
      const count = body.recurring.interval_count ?? 1;
      if (count > MAX_INTERVAL_COUNT[interval]) {
        throw ApiError.validation([{ path: 'body/recurring/interval_count', message: `must be at most ${MAX_INTERVAL_COUNT[interval]} for interval ${interval} (three years)` }]);
      }
      const id = await reserveResourceId(ctx, newId('price'));
      const row = await insertPrice(deps.db, env, {
        id, account_id: scope.account.id, product_id: product.id, unit_amount: body.unit_amount, currency: body.currency,
        interval, interval_count: count, metadata: body.metadata ?? {},
      });
      return { data: serializePrice(row) };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/prices',
    tag: TAG,
    summary: 'List prices, newest first',
    permission: 'billing:read',
    errors: ['invalid_pagination'],
    envelope: 'paginated',
    message: 'Prices retrieved',
    query: Obj({
      ...Pagination,
      starting_after: Type.Optional({ ...Id('price'), description: 'A price of this list: the page right after it (older).' }),
      ending_before: Type.Optional({ ...Id('price'), description: 'A price of this list: the page right before it (newer).' }),
      product_id: Type.Optional(Id('prod')),
      active: Type.Optional(Type.Boolean()),
    }),
    response: Type.Array(PriceSchema),
    async handler({ query, access, deps }) {
      const scope = await access.forAccount();
      const start = listStart(query);
      const filter = { active: query.active, product_id: query.product_id };
      const listed = await listPrices(deps.db, scope.environment, scope.account.id, filter, start, query.limit ?? 10);
      if (!listed) throw paginationError(`query/${'startingAfter' in start ? 'starting_after' : 'ending_before'}`, 'no such price in this account');
      return { data: listed.rows.map(serializePrice), total: listed.total, hasMore: listed.hasMore, ...('page' in start ? {} : { page: null }) };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/prices/:id',
    tag: TAG,
    summary: 'Get one price',
    permission: 'billing:read',
    message: 'Price retrieved',
    params: Params,
    response: PriceSchema,
    async handler({ params, access, deps }) {
      const { row } = await findVisible(access, 'price', (env) => findPrice(deps.db, env, params.id));
      return { data: serializePrice(row) };
    },
  }),

  defineRoute({
    method: 'patch',
    path: '/prices/:id',
    tag: TAG,
    summary: 'Retire a price (active: false: it goes on no new subscription) or bring it back, or change its metadata; amounts never change',
    permission: 'billing:write',
    message: 'Price updated',
    params: Params,
    body: Obj({ active: Type.Optional(Type.Boolean()), metadata: Type.Optional(Metadata) }),
    response: PriceSchema,
    async handler({ params, body, access, deps }) {
      const { row, env } = await findVisible(access, 'price', (e) => findPrice(deps.db, e, params.id));
      if (!Object.keys(body).length) return { data: serializePrice(row) };
      const updated = await updatePrice(deps.db, env, row.id, body);
      return { data: serializePrice(updated ?? row) };
    },
  }),
];
