import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, TestStack } from '../support/stack';
import { buildDashboard } from './support';

const ROOT = join(__dirname, '..', '..');

describe('serving /dashboard', () => {
  let server: TestStack;
  beforeAll(async () => { server = await startStack(); });
  afterAll(async () => { await server?.close(); });

  it('answers client-side routes with the app, assets with long caching, and a missing asset with 404', async () => {
    if (!existsSync(join(ROOT, 'dashboard', 'dist', 'index.html'))) await buildDashboard();
    const deep = await server.http.get('/dashboard/payments/pay_123');
    expect(deep.status).toBe(200);
    expect(deep.headers['content-type']).toContain('text/html');
    expect(deep.headers['cache-control']).toBe('no-cache');
    expect(deep.headers['content-security-policy']).toContain("default-src 'self'");
    const script = /src="(\/dashboard\/assets\/[^"]+\.js)"/.exec(deep.text)![1];
    const asset = await server.http.get(script);
    expect(asset.status).toBe(200);
    expect(asset.headers['cache-control']).toContain('immutable');
    expect((await server.http.get('/dashboard/assets/nope.js')).status).toBe(404);
    expect((await server.http.get('/dashboard/..%2f..%2fpackage.json')).text).not.toContain('"name": "switchboard"');
    expect((await server.http.get('/v1/payments')).status).toBe(401);
  });
});
