import '../api/start-tracing';
import { loadConfig } from '../db/local-state';
import { createDb } from '../db/knex';
import { createApp, type AppOptions } from '../api/app';
import { createApiDeps, createHttpServer } from '../api/server';
import { ROUTES } from '../api/routes';

/** The layers the bench turns off one at a time, as createApp's options. */
const LAYERS_OFF: Record<string, AppOptions> = { metrics_off: { metrics: false }, logging_off: { requestLog: false } };

/**
 * The API as api/main.ts runs it on PORT, and beside it, in the same process and on the ports
 * BENCH_LAYER_PORTS names (`{"metrics_off": 4001, "logging_off": 4002}`), the same API with that one layer
 * off: read in turns, two apps of one process differ only in that layer's code, not in what two processes
 * make of the same code (their JIT and heap, measured at ±5 % of the CPU per read here). Tracing is
 * switched the product's way, by OTEL_EXPORTER_OTLP_ENDPOINT, for the whole process.
 */
async function main(): Promise<void> {
  const config = loadConfig();
  const db = createDb(config.databaseUrl!, { max: 20 });
  const deps = createApiDeps(db, config, config.temporal.address ?? 'localhost:7233');
  const layerPorts = JSON.parse(process.env.BENCH_LAYER_PORTS ?? '{}') as Record<string, number>;
  const apps: [port: number, options: AppOptions][] = [
    [config.port, {}],
    ...Object.entries(layerPorts).map(([layer, port]): [number, AppOptions] => {
      if (!LAYERS_OFF[layer]) throw new Error(`BENCH_LAYER_PORTS: no layer ${layer} (${Object.keys(LAYERS_OFF).join(', ')})`);
      return [port, LAYERS_OFF[layer]];
    }),
  ];
  for (const [port, options] of apps) {
    const server = createHttpServer(createApp(deps, ROUTES, options));
    await new Promise<void>((resolve) => server.listen(port, resolve));
  }
  console.log('api variant listening');
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
