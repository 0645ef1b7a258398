// Imported first by worker/main.ts: tracing has to be running before the modules whose HTTP calls it traces load.
import { startTracing } from '../telemetry/tracing';

startTracing('switchboard-worker');
