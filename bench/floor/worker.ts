import { request } from 'undici';
import { NativeConnection, Worker, DefaultLogger, Runtime } from '@temporalio/worker';

export const FLOOR_TASK_QUEUE = 'bench-floor';

/** A worker for the floor workflows, tuned like ours, in its own process. */
async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS! });
  const worker = await Worker.create({
    connection,
    taskQueue: FLOOR_TASK_QUEUE,
    workflowsPath: require.resolve('./workflows'),
    activities: {
      processorCall: async () => {},
      // bench/floor/disputes.ts: when a dispute notice counts as applied.
      noticeApplied: async () => Date.now(),
      // The same kind of request as a webhook delivery: a JSON POST over undici, the answer read.
      deliver: async (url: string, n: number) => {
        const res = await request(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ type: 'floor.delivery', n }) });
        await res.body.text();
        if (res.statusCode >= 300) throw new Error(`receiver answered ${res.statusCode}`);
      },
    },
    maxCachedWorkflows: 1000,
  });
  console.log('floor worker started');
  await worker.run();
  await connection.close();
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
