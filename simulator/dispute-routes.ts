// The simulated processor's dispute endpoints (docs/sandbox-processor.md#disputes-in-the-sandbox), on the
// server's /v1 and /_inspect routers: answering a dispute goes through the same idempotency and knobs as
// a charge's operations (`perform`), reading one answers after the knobs' latency like a charge look-up.
//
//   POST /v1/disputes/:id/evidence      { evidence?: { <field>: text }, submit?: boolean }
//   POST /v1/disputes/:id/accept        {}
//   GET  /v1/disputes/:id
//   GET  /_inspect/disputes, GET /_inspect/disputes/:id

import type { Context } from 'koa';
import type { Router } from '@koa/router';
import { errorBody, SimulatorError } from './errors';
import { Disputes, evidenceRequest } from './disputes';
import type { SimulatorState } from './knobs';
import type { Answer, Operation } from './operations';
import { readJson } from './requests';

type StateContext = Context & { state: SimulatorState };

export interface DisputeRouteDeps {
  disputes: Disputes;
  perform(ctx: StateContext, operation: Operation, target: string, request: unknown, execute: () => { answer: Answer; chargeId?: string }): Promise<void>;
  answerAfterLatency(ctx: StateContext, answer: Answer): Promise<void>;
}

export function disputeRoutes(api: Router<SimulatorState>, inspect: Router, deps: DisputeRouteDeps): void {
  const { disputes, perform } = deps;

  api.get('/disputes/:id', async (ctx) => {
    const dispute = disputes.find(ctx.params.id, ctx.state.apiKey);
    const answer: Answer = dispute ? { status: 200, body: dispute } : { status: 404, body: errorBody('dispute_not_found', `no dispute ${ctx.params.id}`) };
    await deps.answerAfterLatency(ctx, answer);
  });

  api.post('/disputes/:id/evidence', async (ctx) => {
    const request = evidenceRequest(await readJson(ctx));
    const id = ctx.params.id;
    await perform(ctx, 'dispute_evidence', id, request, () => disputes.evidence(id, ctx.state.apiKey, request, ctx.state.knobs));
  });

  api.post('/disputes/:id/accept', async (ctx) => {
    await readJson(ctx);
    const id = ctx.params.id;
    await perform(ctx, 'dispute_accept', id, {}, () => disputes.accept(id, ctx.state.apiKey));
  });

  inspect.get('/disputes', (ctx) => { ctx.body = { disputes: disputes.list() }; });
  inspect.get('/disputes/:id', (ctx) => {
    const dispute = disputes.list().find((candidate) => candidate.id === ctx.params.id);
    if (!dispute) throw new SimulatorError(404, 'not_found', `no dispute ${ctx.params.id}`);
    ctx.body = dispute;
  });
}
