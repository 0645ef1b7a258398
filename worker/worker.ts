import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { NativeConnection, Worker, WorkerOptions } from '@temporalio/worker';
import {
  makeWorkflowExporter, OpenTelemetryActivityInboundInterceptor, OpenTelemetryActivityOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/worker';
import { createActivities, type ActivityDeps } from '../activities';
import { TASK_QUEUES } from '../contracts/temporal';
import { ROOT_DIR } from '../db/local-state';
import { currentTracing, workflowClientInterceptors, WORKFLOW_INTERCEPTOR_MODULES, type Tracing } from '../telemetry/tracing';
import { permanentDataErrors } from './data-errors';

export const WORKFLOW_BUNDLE_PATH = join(ROOT_DIR, 'dist', 'workflow-bundle.js');

export interface WorkerSetup extends ActivityDeps {
  connection: NativeConnection;
  namespace: string;
  /** A pre-built bundle (production, tests); without one the workflows are bundled from source. */
  workflowBundlePath?: string;
  /** Worker tuning, passed through (cache size, concurrency). */
  tuning?: Partial<WorkerOptions>;
}

/** One worker per task queue (`payments`, `webhooks`), sharing a connection and the activities. */
export async function createWorkers(setup: WorkerSetup): Promise<Worker[]> {
  const activities = createActivities(setup);
  const bundlePath = setup.workflowBundlePath ?? (existsSync(WORKFLOW_BUNDLE_PATH) ? WORKFLOW_BUNDLE_PATH : undefined);
  const workflows = bundlePath
    ? { workflowBundle: { codePath: bundlePath } }
    : { workflowsPath: require.resolve('../workflows') };
  const tracing = tracingOptions(currentTracing(), !bundlePath);
  // The data-error classification runs inside tracing's, so a span records the failure as it leaves.
  const interceptors = { ...tracing.interceptors, activity: [...(tracing.interceptors?.activity ?? []), permanentDataErrors] };
  return Promise.all(Object.values(TASK_QUEUES).map((taskQueue) => Worker.create({
    connection: setup.connection,
    namespace: setup.namespace,
    taskQueue,
    activities,
    ...workflows,
    ...tracing,
    interceptors,
    maxCachedWorkflows: setup.config.workerMaxCachedWorkflows,
    shutdownGraceTime: '10s',
    ...setup.tuning,
  })));
}

/**
 * Temporal's OpenTelemetry interceptors (docs/observability.md#traces): activities continue the span
 * their workflow scheduled them under, the client activities use (fan-out's starts) passes the span on,
 * and workflow spans, made in the sandbox for workflows started traced, leave it through the `exporter`
 * sink — dropped when this worker does not trace.
 */
function tracingOptions(tracing: Tracing | undefined, fromSource: boolean): Partial<WorkerOptions> {
  // Given only when bundling from source: a pre-built bundle has them already (and the SDK warns, at
  // every start, that it ignores them beside one).
  const workflowModules = fromSource ? WORKFLOW_INTERCEPTOR_MODULES : undefined;
  if (!tracing) return { interceptors: { workflowModules }, sinks: { exporter: { export: { fn: () => undefined } } } };
  return {
    interceptors: {
      activity: [(ctx) => ({ inbound: new OpenTelemetryActivityInboundInterceptor(ctx), outbound: new OpenTelemetryActivityOutboundInterceptor(ctx) })],
      client: { workflow: workflowClientInterceptors() },
      workflowModules,
    },
    sinks: { exporter: makeWorkflowExporter(tracing.spanProcessor, tracing.resource) },
  };
}
