import { DefaultLogger, type BundleOptions } from '@temporalio/worker';
import { WORKFLOW_INTERCEPTOR_MODULES } from '../telemetry/tracing';

/**
 * How the workflow code is bundled: by the build (scripts/bundle-workflows.ts), by the test suite, and by
 * a worker started without a bundle. Our workflow modules are preloaded: evaluated once per workflow
 * thread and shared by its workflows, where the SDK otherwise evaluates every one of them again for each
 * new workflow (about a millisecond of each payment's first workflow task, and a currency formatter
 * built anew). Sharing is safe because they keep no state of their own: constants, functions and
 * classes only, which test/unit/workflow-module-state.test.ts holds them to. The tracing interceptors
 * are not preloaded: they are required only by a workflow started with a trace context.
 */
export function workflowBundleOptions(workflowsPath: string): BundleOptions {
  return {
    workflowsPath,
    workflowInterceptorModules: WORKFLOW_INTERCEPTOR_MODULES,
    preloadModules: [workflowsPath],
    logger: new DefaultLogger('WARN'),
  };
}
