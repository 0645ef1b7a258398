import type { Knex } from 'knex';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { countDeliveriesByState } from '../db/webhook-deliveries';
import type { OutcomeKind, ProviderAdapter } from './providers/types';

/**
 * The worker's Prometheus metrics (docs/observability.md#metrics). One registry per process: the worker
 * serves it on WORKER_METRICS_PORT (worker/metrics.ts). Labels are bounded: statuses, outcome classes and
 * adapter identifiers, never an id or card data.
 */
export const workerRegistry = new Registry();
collectDefaultMetrics({ register: workerRegistry });

export const paymentTransitions = new Counter({
  name: 'payment_transitions_total', help: 'Payment status changes recorded, by the status entered.',
  labelNames: ['status'] as const, registers: [workerRegistry],
});
export const providerCalls = new Counter({
  name: 'provider_calls_total', help: 'Calls to a provider adapter, by provider, operation and outcome class.',
  labelNames: ['provider', 'operation', 'outcome'] as const, registers: [workerRegistry],
});
export const providerCallDuration = new Histogram({
  name: 'provider_call_duration_seconds', help: 'How long a provider adapter call took.',
  labelNames: ['provider', 'operation'] as const, registers: [workerRegistry],
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
});
export const refunds = new Counter({
  name: 'refunds_total', help: 'Refunds settled, by outcome.', labelNames: ['outcome'] as const, registers: [workerRegistry],
});
export const webhookDeliveryAttempts = new Counter({
  name: 'webhook_delivery_attempts_total', help: 'Webhook delivery attempts, by response class.',
  labelNames: ['outcome'] as const, registers: [workerRegistry],
});

/** The database the delivery gauges count in, once the worker's metrics server is up. */
let deliveriesDb: Knex | undefined;
/** One COUNT per scrape for both gauges: the first gauge's collect reads, the second reuses it. */
let lastCount: Promise<{ pending: number; deadLettered: number }> | undefined;
function deliveryCounts(first: boolean) {
  if (first || !lastCount) lastCount = deliveriesDb ? countDeliveriesByState(deliveriesDb) : Promise.resolve({ pending: 0, deadLettered: 0 });
  return lastCount;
}
new Gauge({
  name: 'webhook_deliveries_pending', help: 'Webhook deliveries waiting for their first or next attempt.', registers: [workerRegistry],
  async collect() { this.set((await deliveryCounts(true)).pending); },
});
new Gauge({
  name: 'webhook_deliveries_dead_lettered', help: 'Webhook deliveries given up on (dead-lettered), until replayed.', registers: [workerRegistry],
  async collect() { this.set((await deliveryCounts(false)).deadLettered); },
});

/** Where the delivery gauges count (worker/metrics.ts). */
export function countDeliveriesIn(db: Knex | undefined): void {
  deliveriesDb = db;
  lastCount = undefined;
}

/** Outcome kinds as metric labels: `hard_decline` → `hard`, `transport_error` → `transport`. */
const OUTCOME_CLASS: Record<OutcomeKind, string> = {
  approved: 'approved', hard_decline: 'hard', soft_decline: 'soft', transport_error: 'transport',
  unknown: 'unknown', pending: 'pending', requires_action: 'requires_action',
};

/** Adapter methods and their label (snake_case, as ProviderOperation names them). */
const OPERATIONS = {
  authorize: 'authorize', capture: 'capture', void: 'void', refund: 'refund',
  getStatus: 'get_status', completeAuthentication: 'complete_authentication',
} as const;

/** An answer's outcome class; a look-up that found nothing is `unknown`, one that got no answer `transport`. */
function outcomeClass(output: unknown): string {
  const answer = output as { outcome?: { kind?: OutcomeKind }; lookup?: string } | undefined;
  const kind = answer?.outcome?.kind;
  if (kind) return OUTCOME_CLASS[kind] ?? 'unknown';
  return answer?.lookup === 'failed' ? 'transport' : 'unknown';
}

const tracer = trace.getTracer('switchboard-worker');

/**
 * The adapter with each operation counted, timed and, with tracing on, a span (`provider authorize`,
 * its outcome class; the HTTP call beneath it). A call that throws counts as `transport`: the activity
 * retries it like a transport error.
 */
export function instrumentAdapter(adapter: ProviderAdapter, provider: string): ProviderAdapter {
  const wrapped: ProviderAdapter = Object.create(adapter) as ProviderAdapter;
  for (const [method, operation] of Object.entries(OPERATIONS) as [keyof typeof OPERATIONS, string][]) {
    const call = adapter[method].bind(adapter) as (input: unknown) => Promise<unknown>;
    (wrapped as unknown as Record<string, unknown>)[method] = (input: unknown) => tracer.startActiveSpan(
      `provider ${operation}`, { kind: SpanKind.CLIENT, attributes: { 'switchboard.provider': provider, 'switchboard.provider.operation': operation } },
      async (span) => {
        const end = providerCallDuration.startTimer({ provider, operation });
        let outcome = 'transport';
        try {
          const output = await call(input);
          outcome = outcomeClass(output);
          return output;
        } catch (err) {
          span.setStatus({ code: SpanStatusCode.ERROR });
          throw err;
        } finally {
          providerCalls.inc({ provider, operation, outcome });
          end();
          span.setAttribute('switchboard.provider.outcome', outcome);
          span.end();
        }
      },
    );
  }
  return wrapped;
}
