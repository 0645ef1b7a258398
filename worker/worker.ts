import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { NativeConnection, Worker, WorkerOptions } from '@temporalio/worker';
import {
  makeWorkflowExporter, OpenTelemetryActivityInboundInterceptor, OpenTelemetryActivityOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/worker';
import { createActivities, type ActivityDeps } from '../activities';
import { webhookContext, webhookDispatcher } from '../activities/webhooks';
import { TASK_QUEUES } from '../contracts/temporal';
import { ROOT_DIR } from '../db/local-state';
import { currentTracing, workflowClientInterceptors, WORKFLOW_INTERCEPTOR_MODULES, type Tracing } from '../telemetry/tracing';
import { permanentDataErrors } from './data-errors';
import { workflowBundleOptions } from './bundle-options';

export const WORKFLOW_BUNDLE_PATH = join(ROOT_DIR, 'dist', 'workflow-bundle.js');

export interface WorkerSetup extends ActivityDeps {
  connection: NativeConnection;
  namespace: string;
  /** A pre-built bundle (production, tests); without one the workflows are bundled from source. */
  workflowBundlePath?: string;
  /** Worker tuning, passed through (cache size, concurrency). */
  tuning?: Partial<WorkerOptions>;
}

/** A worker process's Temporal workers and its event dispatcher, run and stopped together. */
export interface WorkerProcess {
  workers: Worker[];
  /** Runs the workers and the dispatcher; resolves once the workers have stopped (a signal, or shutdown()) and the dispatcher after them. */
  run(): Promise<void>;
  shutdown(): void;
}

/**
 * One worker per task queue (`payments`, `webhooks`), sharing a connection and the activities, and the
 * event dispatcher that fans out the events they write (activities/webhooks/outbox.ts), sharing the
 * webhook activities' per-account slots and starting delivery workflows with the webhooks worker's client.
 */
export async function createWorkers(setup: WorkerSetup): Promise<WorkerProcess> {
  const webhooks = webhookContext(setup);
  const workers = await temporalWorkers(setup, createActivities({ ...setup, webhooks }));
  const webhookWorker = workers.find((w) => w.options.taskQueue === TASK_QUEUES.webhooks)!;
  const dispatcher = webhookDispatcher(webhooks, async () => webhookWorker.client!);
  return {
    workers,
    async run() {
      const dispatching = dispatcher.run();
      try {
        await Promise.all(workers.map((w) => w.run()));
      } finally {
        dispatcher.stop();
        await dispatching;
      }
    },
    shutdown() {
      for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
    },
  };
}

async function temporalWorkers(setup: WorkerSetup, activities: ReturnType<typeof createActivities>): Promise<Worker[]> {
  const bundlePath = setup.workflowBundlePath ?? (existsSync(WORKFLOW_BUNDLE_PATH) ? WORKFLOW_BUNDLE_PATH : undefined);
  const workflows = bundlePath ? { workflowBundle: { codePath: bundlePath } } : bundledFromSource(require.resolve('../workflows'));
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

/** A worker without a pre-built bundle bundles the workflows itself, as the build does (workflowBundleOptions). */
function bundledFromSource(workflowsPath: string): Partial<WorkerOptions> {
  return { workflowsPath, bundlerOptions: { preloadModules: workflowBundleOptions(workflowsPath).preloadModules } };
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
