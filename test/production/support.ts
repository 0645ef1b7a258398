import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A binary installed with pip (`st` from schemathesis): the Python scripts folder first (where pip puts
 * it, before any pyenv rehash), then PATH. Undefined when it is not installed.
 */
export function findPythonTool(binary: string): string | undefined {
  const dirs: string[] = [];
  try {
    dirs.push(execFileSync('python3', ['-c', 'import sysconfig;print(sysconfig.get_path("scripts"))'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
  } catch {
    // no Python: PATH only
  }
  dirs.push(...(process.env.PATH ?? '').split(':').filter(Boolean));
  return dirs.map((dir) => join(dir, binary)).find((path) => existsSync(path));
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A TCP port that was free a moment ago (for servers that must come back on the same port). */
export async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
