import { Type } from '@sinclair/typebox';
import { findInvoice, listInvoices, type InvoiceRow } from '../../db/invoices';
import { INVOICE_STATUSES, type SubscriptionChange } from '../../contracts/billing';
import { ApiError, withArticle } from '../errors';
import { listStart, paginationError } from '../pagination';
import { defineRoute, type Route } from '../route';
import { InvoiceSchema, serializeInvoice } from '../../resources/invoices';
import { Id, Obj, Pagination } from '../../resources/schemas';
import { findVisible } from './environment-lookup';
import { sendChange } from './billing-seals';

const TAG = 'Billing: invoices';

const Params = Obj({ id: Type.String({ minLength: 1, maxLength: 100 }) });

/** An invoice command: sent to the invoice's subscription, whose workflow applies it between its own steps. */
function invoiceCommand(spec: { path: string; summary: string; message: string; verb: string; kind: 'pay_invoice' | 'void_invoice' | 'mark_uncollectible' }): Route {
  return defineRoute({
    method: 'post',
    path: `/invoices/:id/${spec.path}`,
    tag: TAG,
    summary: spec.summary,
    permission: 'billing:write',
    message: spec.message,
    errors: ['invalid_state', 'temporal_unavailable'],
    params: Params,
    response: InvoiceSchema,
    async handler({ params, access, deps, ctx, principal }) {
      const { row, env } = await findVisible(access, 'invoice', (e) => findInvoice(deps.db, e, params.id));
      // Answered here when it is plain from the row; the workflow checks again under its lock.
      if (row.status !== 'OPEN') throw new ApiError('invalid_state', `${withArticle(row.status)} invoice cannot be ${spec.verb}.`, { status: row.status });
      const change: SubscriptionChange = { kind: spec.kind, invoiceId: row.id };
      await sendChange(deps, { ctx, principal, env, subscriptionId: row.subscription_id, change });
      const after: InvoiceRow = (await findInvoice(deps.db, env, row.id)) ?? row;
      return { data: serializeInvoice(after) };
    },
  });
}

export const invoiceRoutes = [
  defineRoute({
    method: 'get',
    path: '/invoices',
    tag: TAG,
    summary: 'List invoices, newest first',
    permission: 'billing:read',
    errors: ['invalid_pagination'],
    envelope: 'paginated',
    message: 'Invoices retrieved',
    query: Obj({
      ...Pagination,
      starting_after: Type.Optional({ ...Id('in'), description: 'An invoice of this list: the page right after it (older).' }),
      ending_before: Type.Optional({ ...Id('in'), description: 'An invoice of this list: the page right before it (newer).' }),
      subscription_id: Type.Optional(Id('sub')),
      status: Type.Optional(Type.Union(INVOICE_STATUSES.map((s) => Type.Literal(s)))),
      customer_id: Type.Optional(Id('cus')),
    }),
    response: Type.Array(InvoiceSchema),
    async handler({ query, access, deps }) {
      const scope = await access.forAccount();
      const start = listStart(query);
      const filter = { subscription_id: query.subscription_id, status: query.status, customer_id: query.customer_id };
      const listed = await listInvoices(deps.db, scope.environment, scope.account.id, filter, start, query.limit ?? 10);
      if (!listed) throw paginationError(`query/${'startingAfter' in start ? 'starting_after' : 'ending_before'}`, 'no such invoice in this account');
      return { data: listed.rows.map(serializeInvoice), total: listed.total, hasMore: listed.hasMore, ...('page' in start ? {} : { page: null }) };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/invoices/:id',
    tag: TAG,
    summary: 'Get one invoice, with its lines and payment attempts',
    permission: 'billing:read',
    message: 'Invoice retrieved',
    params: Params,
    response: InvoiceSchema,
    async handler({ params, access, deps }) {
      const { row } = await findVisible(access, 'invoice', (env) => findInvoice(deps.db, env, params.id));
      return { data: serializeInvoice(row) };
    },
  }),

  invoiceCommand({
    path: 'pay', verb: 'paid', kind: 'pay_invoice', message: 'Invoice payment attempted',
    summary: 'Try to pay an OPEN invoice now on the subscription\'s card (its payment not under way); answers after the attempt\'s walk',
  }),
  invoiceCommand({
    path: 'void', verb: 'voided', kind: 'void_invoice', message: 'Invoice voided',
    summary: 'Void an OPEN invoice: nothing more is owed by it',
  }),
  invoiceCommand({
    path: 'mark-uncollectible', verb: 'marked uncollectible', kind: 'mark_uncollectible', message: 'Invoice marked uncollectible',
    summary: 'Write an OPEN invoice off as uncollectible',
  }),
];
