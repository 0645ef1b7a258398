// The read scenarios (docs/performance.md#scenarios): one payment read by GET over 32 connections, ours
// against the bare baseline (`read`), and each per-request layer of the API on and off (`overhead`).
// Both read the sides in turns on the same machine, which is what makes their ratios comparable.

import autocannon from 'autocannon';
import { cpuMs, Repeated, round } from './measure';
import { repeat } from './runs';
import { freePort, launch, sink, type Stack } from './stack';

const READ_SECONDS = Number(process.env.BENCH_SECONDS ?? 6);
/** Each read run alternates its sides in this many slices (see readInTurns). */
const READ_SLICES = 3;

/** One side of a read comparison: the URL to read, the process that answers it, the headers to send. */
export interface ReadSide { url: string; pid: number; headers?: Record<string, string> }

/** What the read scenarios need: the stack, and one payment to read with the key that may. */
export interface ReadTarget { stack: Stack; paymentId: string; key: string }

async function cannon(target: string, headers: Record<string, string> = {}, seconds = READ_SECONDS) {
  const result = await autocannon({ url: target, connections: 32, duration: seconds, headers });
  if (result.non2xx || result.errors) throw new Error(`${target}: ${result.non2xx} non-2xx (${JSON.stringify(result.statusCodeStats)}), ${result.errors} errors`);
  return result;
}

/**
 * Reads each server in turns, `slices` slices (default READ_SLICES) of READ_SECONDS / READ_SLICES each
 * (the order reversed every other slice), so that every side sees the same machine: on a shared 2-core VM one
 * side measured a minute after the other moved the ratio by ±0.2. Per side: requests per second over
 * its slices, the worst slice's p99, and the CPU its server process spent per answered request (what
 * the sides compete on; a throughput ratio also moves with the share Postgres and the load generator take).
 */
async function readInTurns(sides: ReadSide[], slices = READ_SLICES, sliceSeconds = READ_SECONDS / READ_SLICES) {
  const totals = sides.map(() => ({ requests: 0, seconds: 0, cpuMs: 0, p99: 0 }));
  for (let slice = 0; slice < slices; slice++) {
    const order = sides.map((_, i) => i);
    if (slice % 2) order.reverse();
    for (const i of order) {
      const before = cpuMs(sides[i].pid);
      const result = await cannon(sides[i].url, sides[i].headers, sliceSeconds);
      const total = totals[i];
      total.cpuMs += cpuMs(sides[i].pid) - before;
      total.requests += result.requests.total;
      total.seconds += result.duration;
      total.p99 = Math.max(total.p99, result.latency.p99);
    }
  }
  return totals.map((t) => ({ rps: round(t.requests / t.seconds), p99_ms: t.p99, cpu_us: round((t.cpuMs * 1000) / t.requests) }));
}

/** `read`: our GET /v1/payments/:id against the bare baseline reading the same row. */
export async function readScenario({ stack, paymentId, key }: ReadTarget): Promise<Repeated<Record<string, number>>> {
  const sides: ReadSide[] = [
    { url: `${stack.api}/v1/payments/${paymentId}`, pid: stack.apiProc.pid!, headers: { authorization: `Bearer ${key}` } },
    { url: `http://127.0.0.1:${stack.basePort}/payments/${paymentId}`, pid: stack.baseProc.pid! },
  ];
  // Both warmed up first (the baseline's first run used to be its slowest, flattering ours).
  for (const side of sides) await cannon(side.url, side.headers);
  return repeat('read', async () => {
    const [ours, base] = await readInTurns(sides);
    return {
      rps: ours.rps, p99_ms: ours.p99_ms, baseline_rps: base.rps, baseline_p99_ms: base.p99_ms, ratio: round(ours.rps / base.rps),
      cpu_us_per_request: ours.cpu_us, baseline_cpu_us_per_request: base.cpu_us,
    };
  });
}

/**
 * `overhead`: each per-request layer on and off. Metrics and logging: the API as shipped and the same API
 * with that layer off, two apps in one process (bench/api-variant.ts), read in turns — two processes of
 * the same code differ by ±5 % of their CPU per read here, more than a layer costs. Tracing is a
 * process's setting: the shipped API against a process with spans over OTLP to a local sink.
 */
export async function overheadScenario({ stack, paymentId, key }: ReadTarget): Promise<Record<string, Repeated<Record<string, number>>>> {
  const readPath = `/v1/payments/${paymentId}`;
  const bearer = { authorization: `Bearer ${key}` };
  const collector = await sink();
  const overhead: Record<string, Repeated<Record<string, number>>> = {};
  const variantSide = async (variantEnv: NodeJS.ProcessEnv, layerPorts: Record<string, number> = {}) => {
    const port = await freePort();
    const proc = await launch('bench/api-variant.js', { ...stack.env, LOG_LEVEL: 'info', ...variantEnv, PORT: String(port), BENCH_LAYER_PORTS: JSON.stringify(layerPorts) }, 'api variant listening');
    const side = (p: number): ReadSide => ({ url: `http://127.0.0.1:${p}${readPath}`, pid: proc.pid!, headers: bearer });
    return { proc, shipped: side(port), layers: Object.fromEntries(Object.entries(layerPorts).map(([layer, p]) => [layer, side(p)])) };
  };
  const compare = async (name: string, shipped: ReadSide, variant: ReadSide) => {
    // A fresh app: one slice's worth of requests warms it up.
    await cannon(variant.url, bearer, READ_SECONDS / READ_SLICES);
    overhead[name] = await repeat(`overhead: shipped vs ${name.replace('_', ' ')}`, async () => {
      // Four 1-s slices a side (each order twice): the layers are reported, not held to a target, and
      // the bench is to stay under ten minutes.
      const [ours, other] = await readInTurns([shipped, variant], 4, 1);
      return {
        shipped_rps: ours.rps, variant_rps: other.rps, shipped_cpu_us: ours.cpu_us, variant_cpu_us: other.cpu_us,
        // What the layer costs the shipped API (metrics, logging), or what tracing adds to it.
        cost: round(name === 'tracing_on' ? 1 - other.rps / ours.rps : 1 - ours.rps / other.rps),
        cpu_cost: round(name === 'tracing_on' ? other.cpu_us / ours.cpu_us - 1 : 1 - other.cpu_us / ours.cpu_us),
      };
    });
  };
  const layered = await variantSide({}, { metrics_off: await freePort(), logging_off: await freePort() });
  await cannon(layered.shipped.url, bearer, READ_SECONDS / READ_SLICES);
  for (const [name, side] of Object.entries(layered.layers)) await compare(name, layered.shipped, side);
  await new Promise((resolve) => { layered.proc.once('exit', resolve); layered.proc.kill('SIGTERM'); });
  const traced = await variantSide({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.url });
  await compare('tracing_on', { url: `${stack.api}${readPath}`, pid: stack.apiProc.pid!, headers: bearer }, traced.shipped);
  await new Promise((resolve) => { traced.proc.once('exit', resolve); traced.proc.kill('SIGTERM'); });
  collector.server.close();
  return overhead;
}
