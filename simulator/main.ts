// Entry point of the sandbox payment processor: `node dist/simulator/main.js`.

import pino from 'pino';
import { createSimulator } from './server';

const DEFAULT_PORT = 4010;

async function main(): Promise<void> {
  const logger = pino({ name: 'simulator', level: process.env.LOG_LEVEL ?? 'info' });
  const port = Number(process.env.SIMULATOR_PORT ?? DEFAULT_PORT);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new Error(`SIMULATOR_PORT must be a port number, got "${process.env.SIMULATOR_PORT}"`);
  const host = process.env.SIMULATOR_HOST ?? '127.0.0.1';
  // Where browsers reach the simulator (its challenge pages), when not at the address the engine calls it at.
  const publicUrl = process.env.SIMULATOR_PUBLIC_URL || undefined;
  if (publicUrl && !/^https?:\/\/[^/]/.test(publicUrl)) throw new Error(`SIMULATOR_PUBLIC_URL must be an http(s) URL, got "${publicUrl}"`);

  const simulator = createSimulator({ log: (entry) => logger.info(entry, 'request'), publicUrl });
  const running = await simulator.listen(port, host);
  logger.info({ url: running.url }, `sandbox simulator listening on ${running.url}`);

  let stopping = false;
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    running.close().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, 'stop failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
