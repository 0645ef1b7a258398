import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { NativeConnection, Worker, WorkerOptions } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '../activities';
import { TASK_QUEUES } from '../workflows/contract';
import { ROOT_DIR } from '../db/local-state';

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
  return Promise.all(Object.values(TASK_QUEUES).map((taskQueue) => Worker.create({
    connection: setup.connection,
    namespace: setup.namespace,
    taskQueue,
    activities,
    ...workflows,
    maxCachedWorkflows: setup.config.workerMaxCachedWorkflows,
    shutdownGraceTime: '10s',
    ...setup.tuning,
  })));
}
