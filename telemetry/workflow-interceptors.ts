/**
 * The workflow side of tracing (runs in the sandbox; not a workflow), in every workflow bundle. A
 * workflow is traced when it was started with a trace context, i.e. by a client with tracing on (the
 * `_tracer-data` header of its start, which its history keeps): then Temporal's OpenTelemetry
 * interceptors make its spans. Deciding from the start keeps every replay identical to the run it
 * replays, whatever the worker's own setting (the interceptors change when some commands are issued),
 * so tracing can be switched on and off under running payments; untraced workflows pay one header check.
 */
import type { WorkflowInboundCallsInterceptor, WorkflowInterceptors, WorkflowOutboundCallsInterceptor } from '@temporalio/workflow';
import {
  OpenTelemetryInboundInterceptor, OpenTelemetryInternalsInterceptor, OpenTelemetryOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/workflow';
import { TRACE_HEADER } from '@temporalio/interceptors-opentelemetry/lib/instrumentation';

export const interceptors = (): WorkflowInterceptors => {
  let tracing: { inbound: OpenTelemetryInboundInterceptor; outbound: OpenTelemetryOutboundInterceptor } | undefined;
  const inbound: WorkflowInboundCallsInterceptor = {
    // Always the workflow's first call, on every replay too.
    execute(input, next) {
      if (!(TRACE_HEADER in input.headers)) return next(input);
      tracing = { inbound: new OpenTelemetryInboundInterceptor(), outbound: new OpenTelemetryOutboundInterceptor() };
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
    internals: [{ dispose: (input, next) => (tracing ? new OpenTelemetryInternalsInterceptor().dispose(input, next) : next(input)) }],
  };
};
