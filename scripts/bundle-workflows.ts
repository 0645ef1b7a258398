import { writeFileSync } from 'node:fs';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { WORKFLOW_BUNDLE_PATH } from '../worker/worker';
import { WORKFLOW_INTERCEPTOR_MODULES } from '../telemetry/tracing';

/** Bundles the workflow code ahead of time (with the workflow-side tracing interceptors), so production workers start without webpack. */
async function main(): Promise<void> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('../workflows'), workflowInterceptorModules: WORKFLOW_INTERCEPTOR_MODULES, logger: new DefaultLogger('WARN'),
  });
  writeFileSync(WORKFLOW_BUNDLE_PATH, code);
  console.log(`workflow bundle: ${WORKFLOW_BUNDLE_PATH} (${Math.round(code.length / 1024)} KiB)`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
