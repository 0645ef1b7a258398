import { Static, Type } from '@sinclair/typebox';
import type { RoutingPlanRow } from '../db/routing-plans';
import { iso } from '../lib/timestamps';
import { Resource, Timestamp } from './schemas';

// Routing plans (docs/providers-and-routing.md#routing-plans-the-api). The plan's own fields are here;
// its embeds (charges, payment) are the payments resource's, composed by the route, because a payment
// embeds its plans in turn.

const Str = Type.String();
const NullableStr = Type.Union([Type.String(), Type.Null()]);

export const RoutingPlanSchema = Resource('routing_plan', {
  id: Str, account_id: Str, payment_id: Str, request_id: NullableStr, trace_id: NullableStr, current_index: Type.Integer(),
  routing_origin: Str, candidates: Type.Unknown(), metadata: Type.Record(Type.String(), Type.Unknown()),
  created_at: Timestamp, updated_at: Timestamp,
});

export type RoutingPlan = Static<typeof RoutingPlanSchema>;

export function serializeRoutingPlan(row: RoutingPlanRow): RoutingPlan {
  return {
    object: 'routing_plan',
    id: row.id,
    account_id: row.account_id,
    payment_id: row.payment_id,
    request_id: row.request_id ?? null,
    trace_id: row.trace_id ?? null,
    current_index: row.current_index,
    routing_origin: row.routing_origin,
    candidates: row.candidates ?? [],
    metadata: row.metadata ?? {},
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/** One compact line per charge made under a plan, with the index of the candidate it tried. */
export const AttemptSchema = Type.Object({
  attempt_no: Type.Integer(), candidate_index: Type.Union([Type.Integer(), Type.Null()]), charge_id: Str, status: Str,
  payment_provider_config_id: NullableStr, payment_provider_id: NullableStr, payment_provider_method_id: NullableStr,
  decline_code: NullableStr, created_at: Timestamp,
}, { additionalProperties: true });

export type Attempt = Static<typeof AttemptSchema>;

/** What an attempt line reads of a charge. */
export interface AttemptCharge {
  id: string;
  attempt_no: number;
  status: string;
  payment_provider_config_id: string | null;
  payment_provider_id: string | null;
  payment_provider_method_id: string | null;
  decline_code: string | null;
  created_at: Date | string;
}

export function serializeAttempt(plan: RoutingPlanRow, charge: AttemptCharge): Attempt {
  const candidates = Array.isArray(plan.candidates) ? plan.candidates : [];
  const index = candidates.findIndex((c) => c?.payment_provider_config_id === charge.payment_provider_config_id);
  return {
    attempt_no: charge.attempt_no,
    candidate_index: index >= 0 ? index : null,
    charge_id: charge.id,
    status: charge.status,
    payment_provider_config_id: charge.payment_provider_config_id ?? null,
    payment_provider_id: charge.payment_provider_id ?? null,
    payment_provider_method_id: charge.payment_provider_method_id ?? null,
    decline_code: charge.decline_code ?? null,
    created_at: iso(charge.created_at),
  };
}
