/**
 * OpenTelemetry tracing for the API and worker processes (docs/observability.md#traces). Off unless
 * OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set: then nothing is
 * registered, the OpenTelemetry API stays a no-op and the worker runs the workflow bundle without the
 * tracing interceptors. On, spans go over OTLP/HTTP in batches; tests hand in their own exporter.
 */
import { join } from 'node:path';
import { trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { Resource } from '@opentelemetry/resources';
import { BatchSpanProcessor, SimpleSpanProcessor, type SpanExporter, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
// The client part alone: the package's index loads the worker's plugin machinery, which the API has no use for.
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry/lib/client';

export interface Tracing {
  /** The service's resource (name, version), which the worker's workflow spans are exported with too. */
  resource: Resource;
  /** Where every finished span goes; the worker's workflow-span sink hands its spans here. */
  spanProcessor: SpanProcessor;
  /** Flushes what is buffered and unregisters everything. */
  shutdown(): Promise<void>;
}

let active: Tracing | undefined;

/** The workflow-side tracing interceptors, part of every workflow bundle (the bundler finds the .ts or the .js). */
export const WORKFLOW_INTERCEPTOR_MODULES = [join(__dirname, 'workflow-interceptors')];

/**
 * An outgoing call's URL attributes, reduced to its origin: a merchant's webhook URL may carry a token
 * in its path or query, so neither is recorded (the enclosing activity's span says what the call was).
 */
function urlAttributes(origin: string): Record<string, string | undefined> {
  let base: string;
  try {
    base = new URL(origin).origin;
  } catch {
    base = 'unparsable';
  }
  return { 'url.full': base, 'url.path': undefined, 'url.query': undefined, 'http.url': base, 'http.target': undefined };
}

/** The running tracing setup of this process, or undefined when tracing is off. */
export function currentTracing(): Tracing | undefined {
  return active;
}

/** True when spans would be exported: an OTLP endpoint is configured and the SDK is not disabled. */
export function tracingConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED === 'true') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/**
 * Starts tracing for this process when configured (or when `exporter` is given), once. Must run before
 * the modules whose HTTP calls are traced are loaded (the `http` instrumentation patches `require`), so
 * each process's entry point calls it first. Outgoing HTTP is traced only inside a trace (a span from
 * a request, a workflow or an activity), never for background polling.
 */
export function startTracing(service: string, options: { exporter?: SpanExporter; env?: NodeJS.ProcessEnv } = {}): Tracing | undefined {
  if (active) return active;
  const env = options.env ?? process.env;
  if (!options.exporter && !tracingConfigured(env)) return undefined;
  const resource = new Resource({
    [ATTR_SERVICE_NAME]: env.OTEL_SERVICE_NAME || service,
    [ATTR_SERVICE_VERSION]: env.npm_package_version || '0.1.0',
  });
  // The exporter reads OTEL_EXPORTER_OTLP_* (endpoint, headers, timeout) itself.
  const spanProcessor = options.exporter ? new SimpleSpanProcessor(options.exporter) : new BatchSpanProcessor(new OTLPTraceExporter());
  const provider = new NodeTracerProvider({ resource, spanProcessors: [spanProcessor] });
  // Async-local context, W3C trace context and baggage propagation; the sampler from OTEL_TRACES_SAMPLER.
  provider.register();
  const unregister = registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      // undici and fetch: the sandbox and Adyen adapters, webhook deliveries.
      new UndiciInstrumentation({
        requireParentforSpans: true,
        startSpanHook: (request) => urlAttributes(request.origin),
      }),
      // node:http(s) clients: the Stripe library. Incoming requests get their span from the API's middleware.
      new HttpInstrumentation({
        disableIncomingRequestInstrumentation: true,
        requireParentforOutgoingSpans: true,
        startOutgoingSpanHook: (request) => urlAttributes(`${request.protocol ?? 'http:'}//${request.hostname ?? request.host ?? 'localhost'}${request.port ? `:${request.port}` : ''}`),
      }),
    ],
  });
  active = {
    resource,
    spanProcessor,
    async shutdown() {
      unregister();
      await provider.shutdown();
      trace.disable();
      active = undefined;
    },
  };
  return active;
}

/**
 * The Temporal client's interceptors: with tracing on, starts, updates and signals carry the caller's
 * span into the workflow (a `_tracer-data` header). None when off, so histories stay as they were.
 */
export function workflowClientInterceptors(): OpenTelemetryWorkflowClientInterceptor[] {
  return active ? [new OpenTelemetryWorkflowClientInterceptor()] : [];
}
