import { writeFileSync } from 'node:fs';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { WORKFLOW_BUNDLE_PATH } from '../worker/worker';

/** Bundles the workflow code ahead of time, so production workers start without webpack. */
async function main(): Promise<void> {
  const { code } = await bundleWorkflowCode({ workflowsPath: require.resolve('../workflows'), logger: new DefaultLogger('WARN') });
  writeFileSync(WORKFLOW_BUNDLE_PATH, code);
  console.log(`workflow bundle: ${WORKFLOW_BUNDLE_PATH} (${Math.round(code.length / 1024)} KiB)`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
