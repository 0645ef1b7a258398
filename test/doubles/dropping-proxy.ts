// A processor's connection dropped after the work was done: an HTTP proxy on 127.0.0.1 (random port) in
// front of a processor (the sandbox simulator) that passes every request on and, when told to, lets the
// processor do the work and answer, then destroys the client's socket instead of relaying the answer —
// the "connection reset / socket hang up" a client sees when the network fails after sending.

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface DroppingProxy {
  url: string;
  /** The next `times` requests matching `match` (method and path prefix, `POST /v1/charges` by default) are dropped after the processor answered. */
  dropAfterAnswer(options?: { times?: number; match?: string }): void;
  /** Each request dropped so far: method, path and the status the processor had answered. */
  dropped(): { method: string; path: string; status: number }[];
  close(): Promise<void>;
}

export async function startDroppingProxy(target: string): Promise<DroppingProxy> {
  const upstream = new URL(target);
  let remaining = 0;
  let match = 'POST /v1/charges';
  const dropped: { method: string; path: string; status: number }[] = [];

  async function relay(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([name]) => !['host', 'connection', 'content-length'].includes(name)));
    const answer = await fetch(new URL(req.url ?? '/', upstream), {
      method: req.method, headers: headers as Record<string, string>, body: chunks.length ? Buffer.concat(chunks) : undefined,
    });
    const body = Buffer.from(await answer.arrayBuffer());
    if (remaining > 0 && `${req.method} ${req.url}`.startsWith(match)) {
      remaining -= 1;
      dropped.push({ method: req.method ?? '', path: req.url ?? '', status: answer.status });
      req.socket.destroy();
      return;
    }
    const passed: Record<string, string> = {};
    answer.headers.forEach((value, name) => { if (!['content-length', 'connection', 'transfer-encoding', 'keep-alive'].includes(name)) passed[name] = value; });
    res.writeHead(answer.status, passed).end(body);
  }

  const server = createServer((req, res) => {
    relay(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' }).end(String(err));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    dropAfterAnswer(options = {}) {
      remaining = options.times ?? 1;
      match = options.match ?? 'POST /v1/charges';
    },
    dropped: () => [...dropped],
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
