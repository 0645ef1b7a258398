import { hostname } from 'node:os';
import { loadConfig } from '../db/local-state';
import { connectClient } from '../workflows/client';
import { TASK_QUEUES } from '../contracts/temporal';

/**
 * Container healthchecks (`switchboard healthcheck api|worker|simulator`): the API answers /readyz; a
 * worker is healthy when Temporal sees this container polling every task queue; the simulator answers.
 */
async function main(role: string | undefined): Promise<void> {
  if (role === 'api' || role === 'simulator') {
    const port = role === 'api' ? process.env.PORT ?? '3000' : process.env.SIMULATOR_PORT ?? '4010';
    const res = await fetch(`http://127.0.0.1:${port}/${role === 'api' ? 'readyz' : 'healthz'}`, { signal: AbortSignal.timeout(4000) });
    if (!res.ok) throw new Error(`${role} answered ${res.status}`);
    return;
  }
  if (role === 'worker') {
    const config = loadConfig();
    const client = await connectClient(config, config.temporal.address ?? 'localhost:7233');
    try {
      for (const taskQueue of Object.values(TASK_QUEUES)) {
        const { pollers } = await client.workflowService.describeTaskQueue({
          namespace: config.temporal.namespace, taskQueue: { name: taskQueue }, taskQueueType: 1, // workflow tasks
        });
        // The SDK's default worker identity is `<pid>@<hostname>`.
        if (!(pollers ?? []).some((p) => p.identity?.endsWith(`@${hostname()}`))) throw new Error(`no poller of ${taskQueue} from this container`);
      }
    } finally {
      await client.connection.close();
    }
    return;
  }
  throw new Error('usage: healthcheck api|worker|simulator');
}

main(process.argv[2]).then(() => process.exit(0), (err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
