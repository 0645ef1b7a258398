import { Type } from '@sinclair/typebox';
import type { Environment } from '../../db/environments';
import {
  addAddress, addressesByCustomer, createCustomer, CustomerRow, deleteCustomer, findCustomer, listCustomers, markAddressPrimary,
  removeAddress, updateCustomer,
} from '../../db/customers';
import { deletePaymentMethod, insertCard, paymentMethodsByCustomer } from '../../db/payment-methods';
import { validateCard } from '../../lib/cards';
import { looksLikeId } from '../../lib/ids';
import type { Db } from '../../db/knex';
import type { Access, AccountScope } from '../auth/access';
import type { Principal } from '../auth/authenticate';
import { ApiError } from '../errors';
import { CustomerSchema, serializeCustomer } from '../../resources/customers';
import { PaymentMethodSchema, serializePaymentMethod } from '../../resources/payment-methods';
import { defineRoute } from '../route';
import { Country, Metadata, Obj, Pagination } from '../../resources/schemas';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);
const Email = Type.String({ format: 'email', maxLength: 254 });
const Text = (maxLength: number) => Type.String({ minLength: 1, maxLength });
const AddressType = Type.Union([Type.Literal('BILLING'), Type.Literal('SHIPPING')], { default: 'BILLING' });

const AddressInput = Obj({
  type: Type.Optional(AddressType),
  label: Type.Optional(Text(100)),
  country: Type.Optional(Country),
  city: Type.Optional(Text(100)),
  state: Type.Optional(Text(100)),
  line1: Type.Optional(Text(200)),
  line2: Type.Optional(Text(200)),
  zip: Type.Optional(Text(20)),
});

const CustomerFields = {
  name: Type.Optional(Nullable(Text(200))),
  email: Type.Optional(Nullable(Email)),
  phone: Type.Optional(Nullable(Text(40))),
  country: Type.Optional(Nullable(Country)),
  alternate_emails: Type.Optional(Type.Array(Email, { maxItems: 10 })),
  is_guest: Type.Optional(Type.Boolean()),
  metadata: Type.Optional(Metadata),
};

const CustomerParams = Obj({ id: Text(100) });
const AddressParams = Obj({ id: Text(100), addressId: Text(100) });
const PaymentMethodParams = Obj({ id: Text(100), pmId: Text(100) });

interface LocatedCustomer { env: Environment; customer: CustomerRow; scope: AccountScope }

/**
 * Finds a customer by id where the caller may see it. An API key looks only in its own environment's
 * repository; a user's token may reach either, and the row must sit in the schema of its account's
 * environment. Anything not visible is a 404, never a 403, so other tenants' ids are not confirmed.
 */
async function locateCustomer(db: Db, access: Access, principal: Principal, id: string): Promise<LocatedCustomer> {
  if (!looksLikeId(id, 'cus')) throw ApiError.notFound('customer');
  const envs: Environment[] = principal.kind === 'api_key' ? [principal.environment] : ['production', 'sandbox'];
  for (const env of envs) {
    const customer = await findCustomer(db, env, id);
    if (!customer) continue;
    const scope = await access.forResource(customer.account_id, 'customer');
    if (scope.environment !== env) break;
    return { env, customer, scope };
  }
  throw ApiError.notFound('customer');
}

async function customerResponse(db: Db, env: Environment, customer: CustomerRow, includePaymentMethods = false) {
  const addresses = await addressesByCustomer(db, env, [customer.id]);
  const paymentMethods = includePaymentMethods ? await paymentMethodsByCustomer(db, env, customer.id) : undefined;
  return serializeCustomer(customer, addresses.get(customer.id), paymentMethods);
}

async function reloadedCustomer(db: Db, env: Environment, id: string) {
  const customer = await findCustomer(db, env, id);
  if (!customer) throw ApiError.notFound('customer');
  return customerResponse(db, env, customer);
}

export const customerRoutes = [
  defineRoute({
    method: 'post',
    path: '/customers',
    tag: 'Customers',
    summary: 'Create a customer, optionally with addresses',
    permission: 'customer:write',
    status: 201,
    message: 'Customer created',
    body: Obj({ ...CustomerFields, addresses: Type.Optional(Type.Array(AddressInput, { maxItems: 10 })) }),
    response: CustomerSchema,
    async handler({ body, access, deps }) {
      const scope = await access.forAccount();
      const { addresses, ...fields } = body;
      const customer = await createCustomer(deps.db, scope.environment, scope.account.id, fields, addresses);
      return { data: await customerResponse(deps.db, scope.environment, customer) };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/customers',
    tag: 'Customers',
    summary: 'List customers, newest first',
    permission: 'customer:read',
    envelope: 'paginated',
    message: 'Customers retrieved',
    query: Obj(Pagination),
    response: Type.Array(CustomerSchema),
    async handler({ query, access, deps }) {
      const scope = await access.forAccount();
      const { page = 1, limit = 10 } = query;
      const { rows, total } = await listCustomers(deps.db, scope.environment, scope.account.id, { page, limit });
      const addresses = await addressesByCustomer(deps.db, scope.environment, rows.map((r) => r.id));
      return { data: rows.map((r) => serializeCustomer(r, addresses.get(r.id))), total };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/customers/:id',
    tag: 'Customers',
    summary: 'Get a customer with its addresses (and its payment methods when asked)',
    permission: 'customer:read',
    message: 'Customer retrieved',
    params: CustomerParams,
    query: Obj({ include_payment_methods: Type.Optional(Type.Boolean()) }),
    response: CustomerSchema,
    async handler({ params, query, principal, access, deps }) {
      const { env, customer } = await locateCustomer(deps.db, access, principal, params.id);
      // Payment methods belong to their customer (saved and deleted with customer:write, never read apart),
      // so this route's customer:read is their read permission: the embed needs nothing more.
      return { data: await customerResponse(deps.db, env, customer, query.include_payment_methods === true) };
    },
  }),

  defineRoute({
    method: 'patch',
    path: '/customers/:id',
    tag: 'Customers',
    summary: 'Update a customer (fields given replace the stored ones; null clears)',
    permission: 'customer:write',
    message: 'Customer updated',
    params: CustomerParams,
    body: Obj(CustomerFields),
    response: CustomerSchema,
    async handler({ params, body, principal, access, deps }) {
      const { env } = await locateCustomer(deps.db, access, principal, params.id);
      const updated = await updateCustomer(deps.db, env, params.id, body);
      if (!updated) throw ApiError.notFound('customer');
      return { data: await customerResponse(deps.db, env, updated) };
    },
  }),

  defineRoute({
    method: 'delete',
    path: '/customers/:id',
    tag: 'Customers',
    summary: 'Delete a customer (soft: it and its stored cards can no longer be used)',
    permission: 'customer:write',
    message: 'Customer deleted',
    params: CustomerParams,
    response: CustomerSchema,
    async handler({ params, principal, access, deps }) {
      const { env } = await locateCustomer(deps.db, access, principal, params.id);
      const deleted = await deleteCustomer(deps.db, env, params.id);
      if (!deleted) throw ApiError.notFound('customer');
      return { data: await customerResponse(deps.db, env, deleted) };
    },
  }),

  defineRoute({
    method: 'post',
    path: '/customers/:id/addresses',
    tag: 'Customers',
    summary: 'Add an address; the first of its type becomes the default',
    permission: 'customer:write',
    status: 201,
    message: 'Address added',
    params: CustomerParams,
    body: AddressInput,
    response: CustomerSchema,
    async handler({ params, body, principal, access, deps }) {
      const { env } = await locateCustomer(deps.db, access, principal, params.id);
      if (!(await addAddress(deps.db, env, params.id, body))) throw ApiError.notFound('customer');
      return { data: await reloadedCustomer(deps.db, env, params.id) };
    },
  }),

  defineRoute({
    method: 'post',
    path: '/customers/:id/addresses/:addressId/mark-primary',
    tag: 'Customers',
    summary: 'Make an address the default of its type',
    permission: 'customer:write',
    message: 'Address marked primary',
    params: AddressParams,
    response: CustomerSchema,
    async handler({ params, principal, access, deps }) {
      const { env } = await locateCustomer(deps.db, access, principal, params.id);
      if (!(await markAddressPrimary(deps.db, env, params.id, params.addressId))) throw ApiError.notFound('address');
      return { data: await reloadedCustomer(deps.db, env, params.id) };
    },
  }),

  defineRoute({
    method: 'delete',
    path: '/customers/:id/addresses/:addressId',
    tag: 'Customers',
    summary: 'Remove an address; a removed default is replaced by the newest address of its type',
    permission: 'customer:write',
    message: 'Address removed',
    params: AddressParams,
    response: CustomerSchema,
    async handler({ params, principal, access, deps }) {
      const { env } = await locateCustomer(deps.db, access, principal, params.id);
      if (!(await removeAddress(deps.db, env, params.id, params.addressId))) throw ApiError.notFound('address');
      return { data: await reloadedCustomer(deps.db, env, params.id) };
    },
  }),

  defineRoute({
    method: 'post',
    path: '/customers/:id/payment-methods',
    tag: 'Customers',
    summary: 'Store a card for a customer (tokenize); only network, last4 and expiry are ever shown',
    permission: 'customer:write',
    errors: ['invalid_card'],
    status: 201,
    message: 'Payment method created',
    params: CustomerParams,
    body: Obj({
      type: Type.Literal('CARD'),
      card: Obj({
        number: Type.String({ minLength: 1, maxLength: 40 }),
        exp_month: Type.Integer(),
        exp_year: Type.Integer(),
        cvc: Type.String({ minLength: 1, maxLength: 8 }),
        holder_name: Type.Optional(Text(200)),
      }),
      metadata: Type.Optional(Metadata),
    }),
    response: PaymentMethodSchema,
    async handler({ params, body, principal, access, deps }) {
      const { env, customer } = await locateCustomer(deps.db, access, principal, params.id);
      const result = validateCard(body.card);
      if ('problems' in result) {
        const fields = result.problems.map((p) => ({ path: `body/card/${p.field}`, message: p.message }));
        throw new ApiError('invalid_card', `${fields[0].path}: ${fields[0].message}`, { fields });
      }
      const row = await insertCard(deps.db, deps.vault, env, {
        accountId: customer.account_id, customerId: customer.id, card: result.card, holderName: body.card.holder_name, metadata: body.metadata,
      });
      return { data: serializePaymentMethod(row) };
    },
  }),

  defineRoute({
    method: 'delete',
    path: '/customers/:id/payment-methods/:pmId',
    tag: 'Customers',
    summary: 'Delete a stored card (soft; its number and CVC are wiped)',
    permission: 'customer:write',
    message: 'Payment method deleted',
    params: PaymentMethodParams,
    response: PaymentMethodSchema,
    async handler({ params, principal, access, deps }) {
      const { env } = await locateCustomer(deps.db, access, principal, params.id);
      const row = looksLikeId(params.pmId, 'pm') ? await deletePaymentMethod(deps.db, env, params.id, params.pmId) : undefined;
      if (!row) throw ApiError.notFound('payment method');
      return { data: serializePaymentMethod(row) };
    },
  }),
];
