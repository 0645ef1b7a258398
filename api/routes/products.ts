import { Type } from '@sinclair/typebox';
import { findProduct, insertProduct, listProducts, updateProduct } from '../../db/products';
import { newId } from '../../lib/ids';
import { reserveResourceId } from '../middleware/idempotency';
import { listStart, paginationError } from '../pagination';
import { defineRoute } from '../route';
import { ProductSchema, serializeProduct } from '../../resources/products';
import { Id, Metadata, Obj, Pagination } from '../../resources/schemas';
import { findVisible } from './environment-lookup';

const TAG = 'Billing: products';

const Params = Obj({ id: Type.String({ minLength: 1, maxLength: 100 }) });
const Name = Type.String({ minLength: 1, maxLength: 250 });
const Description = Type.String({ maxLength: 1000 });

export const productRoutes = [
  defineRoute({
    method: 'post',
    path: '/products',
    tag: TAG,
    summary: 'Create a product: what is sold; its prices say for how much and how often',
    permission: 'billing:write',
    status: 201,
    message: 'Product created',
    body: Obj({ name: Name, description: Type.Optional(Description), metadata: Type.Optional(Metadata) }),
    response: ProductSchema,
    async handler({ body, access, deps, ctx }) {
      const scope = await access.forAccount();
      const id = await reserveResourceId(ctx, newId('prod'));
      const row = await insertProduct(deps.db, scope.environment, {
        id, account_id: scope.account.id, name: body.name, description: body.description ?? null, metadata: body.metadata ?? {},
      });
      return { data: serializeProduct(row) };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/products',
    tag: TAG,
    summary: 'List products, newest first',
    permission: 'billing:read',
    errors: ['invalid_pagination'],
    envelope: 'paginated',
    message: 'Products retrieved',
    query: Obj({
      ...Pagination,
      starting_after: Type.Optional({ ...Id('prod'), description: 'A product of this list: the page right after it (older).' }),
      ending_before: Type.Optional({ ...Id('prod'), description: 'A product of this list: the page right before it (newer).' }),
      active: Type.Optional(Type.Boolean()),
    }),
    response: Type.Array(ProductSchema),
    async handler({ query, access, deps }) {
      const scope = await access.forAccount();
      const start = listStart(query);
      const listed = await listProducts(deps.db, scope.environment, scope.account.id, { active: query.active }, start, query.limit ?? 10);
      if (!listed) throw paginationError(`query/${'startingAfter' in start ? 'starting_after' : 'ending_before'}`, 'no such product in this account');
      return { data: listed.rows.map(serializeProduct), total: listed.total, hasMore: listed.hasMore, ...('page' in start ? {} : { page: null }) };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/products/:id',
    tag: TAG,
    summary: 'Get one product',
    permission: 'billing:read',
    message: 'Product retrieved',
    params: Params,
    response: ProductSchema,
    async handler({ params, access, deps }) {
      const { row } = await findVisible(access, 'product', (env) => findProduct(deps.db, env, params.id));
      return { data: serializeProduct(row) };
    },
  }),

  defineRoute({
    method: 'patch',
    path: '/products/:id',
    tag: TAG,
    summary: 'Rename a product, or retire it (active: false) or bring it back; products are never deleted',
    permission: 'billing:write',
    message: 'Product updated',
    params: Params,
    body: Obj({
      name: Type.Optional(Name),
      description: Type.Optional(Type.Union([Description, Type.Null()])),
      active: Type.Optional(Type.Boolean()),
      metadata: Type.Optional(Metadata),
    }),
    response: ProductSchema,
    async handler({ params, body, access, deps }) {
      const { row, env } = await findVisible(access, 'product', (e) => findProduct(deps.db, e, params.id));
      if (!Object.keys(body).length) return { data: serializeProduct(row) };
      const updated = await updateProduct(deps.db, env, row.id, body);
      return { data: serializeProduct(updated ?? row) };
    },
  }),
];
