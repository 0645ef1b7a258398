import { ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { inject } from 'vitest';
import type { TestStack } from './stack';
import { stackProcessEnv } from './stack';

const ROOT = join(__dirname, '..', '..');

export interface WorkerProcess {
  proc: ChildProcess;
  /** SIGKILL: the process dies mid-whatever, as a crashed machine would. */
  kill(): Promise<void>;
  stop(): Promise<void>;
  /** The last lines it wrote (stdout and stderr): what a failed precondition prints to say why. */
  recentOutput(): string;
}

const KEPT_OUTPUT_CHARS = 20_000;

/**
 * A real worker process (worker/main.ts) against the suite's Postgres and Temporal, running the
 * suite's pre-built workflow bundle. Resolves once it polls its task queues.
 */
export async function spawnWorker(stack: TestStack, env: Record<string, string> = {}): Promise<WorkerProcess> {
  const proc = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'worker', 'main.ts')], {
    cwd: ROOT,
    env: {
      ...stackProcessEnv(stack, 'test-worker'),
      SIMULATOR_URL: stack.config.simulatorUrl ?? '',
      PROVIDER_TIMEOUT_MS: String(stack.config.providerTimeoutMs),
      // Where processors post their notifications (a sandbox charge's notification_url): the test's API.
      PUBLIC_URL: stack.config.publicUrl,
      WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
      // Test files run side by side: a fixed metrics port (and the SDK's on the next one) would collide.
      WORKER_METRICS_PORT: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  let output = '';
  const keep = (chunk: Buffer) => { output = (output + chunk.toString()).slice(-KEPT_OUTPUT_CHARS); };
  proc.stdout!.on('data', keep);
  proc.stderr!.on('data', keep);
  await new Promise<void>((resolve, reject) => {
    // A worker's start (tsx compiling its TypeScript, the bundle loaded into the sandbox) is slow on two busy cores: 90 s.
    // One that never started is killed: left alive it would poll this pool's namespace for the files after this one.
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`the worker process did not start within 90 s:\n${output.slice(-2000)}`));
    }, 90_000);
    const started = () => {
      if (!output.includes('worker started')) return;
      clearTimeout(timer);
      proc.stdout!.off('data', started);
      resolve();
    };
    proc.stdout!.on('data', started);
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the worker process exited (${code}) before starting:\n${output.slice(-2000)}`));
    });
  });
  return {
    proc,
    async kill() {
      proc.kill('SIGKILL');
      await exited;
    },
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      await exited;
    },
    recentOutput: () => output,
  };
}

/** Polls until `check` returns a value that is not undefined/false, or fails after `timeoutMs`. */
export async function eventually<T>(check: () => Promise<T | undefined | false>, timeoutMs = 30_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
