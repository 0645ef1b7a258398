/**
 * The workflow side of tracing (runs in the sandbox; not a workflow), in every workflow bundle. A
 * workflow is traced when it was started with a trace context, i.e. by a client with tracing on (the
 * `_tracer-data` header of its start, which its history keeps): then Temporal's OpenTelemetry
 * interceptors make its spans. Deciding from the start keeps every replay identical to the run it
 * replays, whatever the worker's own setting (the interceptors change when some commands are issued),
 * so tracing can be switched on and off under running payments; untraced workflows pay one header check.
 *
 * The sandbox evaluates a workflow's modules afresh for every workflow it creates (a new payment, or one
 * replayed into the cache), so OpenTelemetry's are required only by a traced workflow: imported at the
 * top, their evaluation (semantic conventions, the SDK's tracer) was 3.4 ms of the 14 ms of
 * workflow-thread CPU a payment created without confirm costs (docs/performance-log.md#worker-cpu-per-workflow).
 */
import type { WorkflowInboundCallsInterceptor, WorkflowInterceptors, WorkflowOutboundCallsInterceptor } from '@temporalio/workflow';
import type * as OpenTelemetryWorkflow from '@temporalio/interceptors-opentelemetry/lib/workflow';
import type * as OpenTelemetryInstrumentation from '@temporalio/interceptors-opentelemetry/lib/instrumentation';

/** The interceptors' header (their TRACE_HEADER; the type says it is that very string). */
const TRACE_HEADER: typeof OpenTelemetryInstrumentation.TRACE_HEADER = '_tracer-data';

/** Evaluated when a traced workflow first asks, then once per workflow like any module. */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const openTelemetry = (): typeof OpenTelemetryWorkflow => require('@temporalio/interceptors-opentelemetry/lib/workflow');

export const interceptors = (): WorkflowInterceptors => {
  let tracing: { inbound: OpenTelemetryWorkflow.OpenTelemetryInboundInterceptor; outbound: OpenTelemetryWorkflow.OpenTelemetryOutboundInterceptor } | undefined;
  const inbound: WorkflowInboundCallsInterceptor = {
    // Always the workflow's first call, on every replay too.
    execute(input, next) {
      if (!(TRACE_HEADER in input.headers)) return next(input);
      const otel = openTelemetry();
      tracing = { inbound: new otel.OpenTelemetryInboundInterceptor(), outbound: new otel.OpenTelemetryOutboundInterceptor() };
      return tracing.inbound.execute(input, next);
    },
    handleSignal: (input, next) => (tracing ? tracing.inbound.handleSignal(input, next) : next(input)),
    handleUpdate: (input, next) => (tracing ? tracing.inbound.handleUpdate(input, next) : next(input)),
    validateUpdate: (input, next) => (tracing ? tracing.inbound.validateUpdate(input, next) : next(input)),
  };
  const outbound: WorkflowOutboundCallsInterceptor = {
    scheduleActivity: (input, next) => (tracing ? tracing.outbound.scheduleActivity(input, next) : next(input)),
    scheduleLocalActivity: (input, next) => (tracing ? tracing.outbound.scheduleLocalActivity(input, next) : next(input)),
    startChildWorkflowExecution: (input, next) => (tracing ? tracing.outbound.startChildWorkflowExecution(input, next) : next(input)),
    continueAsNew: (input, next) => (tracing ? tracing.outbound.continueAsNew(input, next) : next(input)),
    signalWorkflow: (input, next) => (tracing ? tracing.outbound.signalWorkflow(input, next) : next(input)),
    getLogAttributes: (input, next) => (tracing ? tracing.outbound.getLogAttributes(input, next) : next(input)),
  };
  return {
    inbound: [inbound],
    outbound: [outbound],
    internals: [{ dispose: (input, next) => (tracing ? new (openTelemetry().OpenTelemetryInternalsInterceptor)().dispose(input, next) : next(input)) }],
  };
};
