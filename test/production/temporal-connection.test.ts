import { AsyncLocalStorage } from 'node:async_hooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { inject } from 'vitest';
import type { InterceptingCall, Interceptor } from '@grpc/grpc-js';
import { Client, isGrpcServiceError } from '@temporalio/client';
import { CallScope, ScopedConnection } from '../../workflows/client';
import { connectClient } from '../../workflows/client';
import { loadConfig } from '../../db/local-state';
import { suiteEnv, testNamespace } from '../support/stack';

/**
 * The API's Temporal connection (workflows/connection.ts) keeps each service call's context without an
 * AsyncLocalStorage: the namespace header, a deadline and metadata still reach the server, no storage is
 * ever entered (so Node installs no promise hooks), and a context that could not be carried (one meant
 * for a call made after an await) is refused instead of silently dropped.
 */
describe('Temporal connection without AsyncLocalStorage', () => {
  const sent: { method: string; metadata: Record<string, unknown> }[] = [];
  // A gRPC client interceptor that records what each call sends.
  const recorder: Interceptor = (options, nextCall) => {
    const call = nextCall(options);
    const start = call.start.bind(call);
    call.start = (metadata, listener) => {
      sent.push({ method: options.method_definition.path, metadata: metadata.getMap() });
      start(metadata, listener);
    };
    return call as InterceptingCall;
  };
  let connection: ScopedConnection;
  let client: Client;
  const entered = vi.spyOn(AsyncLocalStorage.prototype, 'run');

  beforeAll(async () => {
    entered.mockClear();
    connection = await ScopedConnection.connect({ address: inject('temporalAddress'), interceptors: [recorder] });
    client = new Client({ connection, namespace: testNamespace() });
  });

  afterAll(async () => {
    entered.mockRestore();
    await connection?.close();
  });

  it('is the connection the API uses, and its context is a CallScope', async () => {
    const api = await connectClient(loadConfig(suiteEnv()), inject('temporalAddress'));
    try {
      expect(api.connection).toBeInstanceOf(ScopedConnection);
      expect((api.connection as ScopedConnection).callContextStorage).toBeInstanceOf(CallScope);
      expect(entered).not.toHaveBeenCalled();
    } finally {
      await api.connection.close();
    }
  });

  it('sends the namespace header on a namespaced call, and enters no AsyncLocalStorage', async () => {
    sent.length = 0;
    const handle = client.workflow.getHandle(`missing-${Date.now()}`);
    await expect(handle.describe()).rejects.toThrow();
    const describe = sent.find((c) => c.method.endsWith('/DescribeWorkflowExecution'));
    expect(describe?.metadata['temporal-namespace']).toBe(testNamespace());
    expect(describe?.metadata['client-name']).toBe('temporal-typescript');
    expect(entered).not.toHaveBeenCalled();
  });

  it('carries metadata and a deadline to a call made at once inside the callback', async () => {
    sent.length = 0;
    await connection.withMetadata({ 'x-switchboard-probe': 'on' }, () => connection.workflowService.getSystemInfo({}));
    expect(sent.at(-1)?.metadata['x-switchboard-probe']).toBe('on');

    const late = await connection.withDeadline(Date.now() - 1, () => connection.workflowService.getSystemInfo({}))
      .then(() => undefined, (err: unknown) => err);
    expect(isGrpcServiceError(late) && late.code).toBe(4); // DEADLINE_EXCEEDED: the deadline was applied
    expect(entered).not.toHaveBeenCalled();
  });

  it('refuses a context meant for a call made after an await, instead of dropping it', async () => {
    sent.length = 0;
    const refused = connection.withDeadline(Date.now() + 60_000, async () => {
      await Promise.resolve();
      return connection.workflowService.getSystemInfo({});
    });
    await expect(refused).rejects.toThrow(/only holds for a service call made at once/);
  });

  it('leaves no context behind after a call', async () => {
    await connection.withMetadata({ 'x-switchboard-probe': 'once' }, () => connection.workflowService.getSystemInfo({}));
    sent.length = 0;
    await connection.workflowService.getSystemInfo({});
    expect(sent.at(-1)?.metadata['x-switchboard-probe']).toBeUndefined();
  });
});
