import type Koa from 'koa';
import { Type, type TOptional, type TString } from '@sinclair/typebox';
import type { Environment } from '../../db/environments';
import { findDispute, listDisputes, type DisputeRow } from '../../db/disputes';
import {
  CLOSED_DISPUTE_STATUSES, DISPUTE_EVIDENCE_FIELDS, DISPUTE_SEAL_PURPOSE, DISPUTE_STATUSES, disputeAnswerText,
  type DisputeAnswer, type DisputeAnswerSent, type DisputeEvidence, type DisputeEvidenceField,
} from '../../contracts/disputes';
import { answerDispute, disputeWorkflowLink } from '../../workflows/disputes/client';
import type { Principal } from '../auth/authenticate';
import type { ApiDeps } from '../deps';
import { ApiError } from '../errors';
import { listStart, paginationError } from '../pagination';
import { defineRoute, workflowContext } from '../route';
import { DisputeSchema, serializeDispute, type Dispute } from '../../resources/disputes';
import { Id, Obj, Pagination } from '../../resources/schemas';
import { changeIdOf } from './billing-seals';
import { findVisible } from './environment-lookup';

const TAG = 'Disputes';

const Params = Obj({ id: Type.String({ minLength: 1, maxLength: 100 }) });

/** The longest evidence text a field takes (Stripe's limit for its text evidence). */
export const MAX_EVIDENCE_CHARS = 20_000;

const EvidenceText = Type.String({ maxLength: MAX_EVIDENCE_CHARS });

const EvidenceBody = Obj({
  ...(Object.fromEntries(DISPUTE_EVIDENCE_FIELDS.map((f) => [f, Type.Optional(EvidenceText)])) as Record<DisputeEvidenceField, TOptional<TString>>),
  submit: Type.Optional(Type.Boolean({ description: 'send the evidence saved (with this) to the processor; it is then decided, and takes no more' })),
}, {
  // Declared in the schema so the document states it: a request that names nothing changes nothing.
  anyOf: [
    ...DISPUTE_EVIDENCE_FIELDS.map((f) => ({ required: [f] })),
    { properties: { submit: { const: true } }, required: ['submit'] },
  ],
  'x-error': 'give at least one evidence field, or submit: true',
});

/** The dispute as the API answers it: the row with its workflow's link for operators. */
function present(deps: Pick<ApiDeps, 'config'>, row: DisputeRow): Dispute {
  const dispute = serializeDispute(row);
  dispute.temporal = disputeWorkflowLink(deps.config, row.id);
  return dispute;
}

/**
 * Seals the answer under the request's update id (its Idempotency-Key's command id, so a retry is applied
 * once) and sends it to the dispute's workflow; answers with the row as the workflow left it. The
 * workflow refuses (409) what the processor would: a closed dispute, a second submission, a late one.
 */
async function sendAnswer(
  deps: ApiDeps, args: { ctx: Koa.Context; principal: Principal; env: Environment; row: DisputeRow; answer: DisputeAnswer },
): Promise<Dispute> {
  const { ctx, principal, env, row, answer } = args;
  // Plain from the row; the workflow checks again, with the deadline and the submission, under its lock.
  if (CLOSED_DISPUTE_STATUSES.includes(row.status)) {
    throw new ApiError('invalid_state', `The dispute is ${row.status}; it takes no more answers.`, { refusal: 'dispute_closed', status: row.status });
  }
  const updateId = changeIdOf(ctx);
  const seal = deps.vault.seal(DISPUTE_SEAL_PURPOSE, disputeAnswerText(row.id, updateId, answer));
  const sent: DisputeAnswerSent = answer.kind === 'evidence'
    ? { kind: 'evidence', encryptedEvidence: deps.vault.encryptJson(answer.evidence), submit: answer.submit } : answer;
  await answerDispute(await deps.temporal(), row.id, { answer: sent, seal, context: workflowContext(ctx, principal) }, updateId);
  const after = await findDispute(deps.db, env, row.id);
  return present(deps, after ?? row);
}

export const disputeRoutes = [
  defineRoute({
    method: 'get',
    path: '/disputes',
    tag: TAG,
    summary: 'List disputes, newest first',
    permission: 'dispute:read',
    errors: ['invalid_pagination'],
    envelope: 'paginated',
    message: 'Disputes retrieved',
    query: Obj({
      ...Pagination,
      starting_after: Type.Optional({ ...Id('dp'), description: 'A dispute of this list: the page right after it (older).' }),
      ending_before: Type.Optional({ ...Id('dp'), description: 'A dispute of this list: the page right before it (newer).' }),
      status: Type.Optional(Type.Union(DISPUTE_STATUSES.map((s) => Type.Literal(s)))),
      payment_id: Type.Optional(Id('pay')),
    }),
    response: Type.Array(DisputeSchema),
    async handler({ query, access, deps }) {
      const scope = await access.forAccount();
      const start = listStart(query);
      const filter = { status: query.status, payment_id: query.payment_id };
      const listed = await listDisputes(deps.db, scope.environment, scope.account.id, filter, start, query.limit ?? 10);
      if (!listed) throw paginationError(`query/${'startingAfter' in start ? 'starting_after' : 'ending_before'}`, 'no such dispute in this account');
      return { data: listed.rows.map(serializeDispute), total: listed.total, hasMore: listed.hasMore, ...('page' in start ? {} : { page: null }) };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/disputes/:id',
    tag: TAG,
    summary: 'Get one dispute, with its evidence, the money it moved and its workflow\'s link for operators',
    permission: 'dispute:read',
    message: 'Dispute retrieved',
    params: Params,
    response: DisputeSchema,
    async handler({ params, access, deps }) {
      const { row } = await findVisible(access, 'dispute', (env) => findDispute(deps.db, env, params.id));
      return { data: present(deps, row) };
    },
  }),

  defineRoute({
    method: 'post',
    path: '/disputes/:id/evidence',
    tag: TAG,
    summary: 'Save evidence for a dispute (text fields), and with submit: true send it to the processor; answers once applied',
    permission: 'dispute:write',
    message: 'Evidence saved',
    errors: ['invalid_state', 'temporal_unavailable'],
    params: Params,
    body: EvidenceBody,
    response: DisputeSchema,
    async handler({ params, body, access, deps, ctx, principal }) {
      const { row, env } = await findVisible(access, 'dispute', (e) => findDispute(deps.db, e, params.id));
      const evidence: DisputeEvidence = {};
      for (const field of DISPUTE_EVIDENCE_FIELDS) if (body[field] !== undefined) evidence[field] = body[field];
      const submit = body.submit ?? false;
      if (!submit && Object.keys(evidence).length === 0) {
        throw ApiError.validation([{ path: 'body', message: 'give at least one evidence field, or submit: true' }]);
      }
      const data = await sendAnswer(deps, { ctx, principal, env, row, answer: { kind: 'evidence', evidence, submit } });
      return { data, message: submit ? 'Evidence submitted' : 'Evidence saved' };
    },
  }),

  defineRoute({
    method: 'post',
    path: '/disputes/:id/accept',
    tag: TAG,
    summary: 'Accept (concede) a dispute: the processor closes it as lost; answers once applied',
    permission: 'dispute:write',
    message: 'Dispute accepted',
    errors: ['invalid_state', 'temporal_unavailable'],
    params: Params,
    response: DisputeSchema,
    async handler({ params, access, deps, ctx, principal }) {
      const { row, env } = await findVisible(access, 'dispute', (e) => findDispute(deps.db, e, params.id));
      return { data: await sendAnswer(deps, { ctx, principal, env, row, answer: { kind: 'accept' } }) };
    },
  }),
];
