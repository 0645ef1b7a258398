import { writeFileSync } from 'node:fs';
import { bundleWorkflowCode } from '@temporalio/worker';
import { WORKFLOW_BUNDLE_PATH } from '../worker/worker';
import { workflowBundleOptions } from '../worker/bundle-options';

/** Bundles the workflow code ahead of time (as workflowBundleOptions says), so production workers start without webpack. */
async function main(): Promise<void> {
  const { code } = await bundleWorkflowCode(workflowBundleOptions(require.resolve('../workflows')));
  writeFileSync(WORKFLOW_BUNDLE_PATH, code);
  console.log(`workflow bundle: ${WORKFLOW_BUNDLE_PATH} (${Math.round(code.length / 1024)} KiB)`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
