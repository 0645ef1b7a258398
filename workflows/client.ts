/**
 * What every feature's command client (`workflows/<feature>/client.ts`) shares: the connection to
 * Temporal, the link into its UI, and Temporal's failures read by type (docs/architecture.md). Client
 * side only: never imported by workflow code, which runs in Temporal's sandbox.
 */
import type { AsyncLocalStorage } from 'node:async_hooks';
import { readFileSync } from 'node:fs';
import {
  ApplicationFailure, Client, Connection, ConnectionOptions, isGrpcServiceError, ServiceError,
  WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, WorkflowUpdateRPCTimeoutOrCancelledError,
} from '@temporalio/client';
import type { Config } from '../lib/config';
import type { ConnectionCtorOptions, RPCImplOptions } from '@temporalio/client/lib/connection';
import { workflowClientInterceptors } from '../telemetry/tracing';
import { ApiError } from '../lib/errors';
import { PROVIDER_EVENT_SIGNAL, type ProviderEventSignal } from '../contracts/temporal';

/** gRPC status codes (fixed by the gRPC protocol) that mean something here. */
const GRPC = { DEADLINE_EXCEEDED: 4, NOT_FOUND: 5, FAILED_PRECONDITION: 9, UNAVAILABLE: 14 } as const;

/**
 * The connection: Temporal's `Connection`, without the AsyncLocalStorage it would otherwise switch on
 * for the whole process.
 *
 * Temporal's `Connection` keeps the context of a service call (the namespace header, a deadline, an
 * abort signal, metadata) in an AsyncLocalStorage, entered by `withMetadata`, `withDeadline`,
 * `withAbortSignal` and `withApiKey`. On Node 20 the first `run` of any AsyncLocalStorage installs
 * promise hooks for the rest of the process's life, so after the API's first payment every promise of
 * every request (a payment read makes dozens) paid for a context nothing on that request reads: about
 * 20 µs of a read's 145 µs of CPU (docs/performance.md#the-read-path).
 *
 * The SDK itself only ever enters that context around a service call it makes at once: the namespace
 * header around each WorkflowService method, the connect deadline around `getSystemInfo`. A scope that
 * holds the context for the synchronous part of the callback gives those calls exactly what they had.
 * What it cannot carry is a context across an `await` (`withDeadline(d, async () => { await x; await
 * client.workflow.start(…) })`): such a call is refused with an error rather than silently made
 * without its deadline or metadata. Nothing in Switchboard calls those methods; pass a deadline or an
 * abort signal per call instead.
 */
type CallContext = NonNullable<ReturnType<Connection['callContextStorage']['getStore']>>;

/** The part of AsyncLocalStorage the connection uses, held for the synchronous extent of a callback. */
export class CallScope {
  private store: CallContext | undefined;
  /** How many times a service call (or a `with…` method) has read the context: see `run`. */
  private reads = 0;

  getStore(): CallContext | undefined {
    this.reads++;
    return this.store;
  }

  run<R>(store: CallContext, fn: () => R): R {
    const outer = this.store;
    const readsBefore = this.reads;
    this.store = store;
    try {
      const result = fn();
      // Every use in the SDK makes its service call before returning; a callback that did not read the
      // context would make its calls later, after an await, without it.
      if (this.reads === readsBefore) {
        throw new Error('A Temporal call context (deadline, metadata, abort signal) only holds for a service call made '
          + 'at once inside the callback, not after an await (ScopedConnection in workflows/client.ts).');
      }
      return result;
    } finally {
      this.store = outer;
    }
  }

  disable(): void {
    this.store = undefined;
  }
}

const scopes = new WeakMap<object, CallScope>();

/** The scope that stands in for one connection's AsyncLocalStorage (the SDK makes one per connection). */
function scopeFor(storage: object): AsyncLocalStorage<CallContext> {
  let scope = scopes.get(storage);
  if (!scope) {
    scope = new CallScope();
    scopes.set(storage, scope);
  }
  return scope as unknown as AsyncLocalStorage<CallContext>;
}

/**
 * A `Connection` whose service calls and `with…` methods share a CallScope in place of the
 * AsyncLocalStorage the SDK creates (and never enters: the storage is only ever created, so no promise
 * hooks are installed). `Connection.connect`, `lazy` and `close` work as documented.
 */
export class ScopedConnection extends Connection {
  protected static override generateRPCImplementation(options: RPCImplOptions): ReturnType<typeof Connection['generateRPCImplementation']> {
    return super.generateRPCImplementation({ ...options, callContextStorage: scopeFor(options.callContextStorage) });
  }

  protected constructor(options: ConnectionCtorOptions) {
    super({ ...options, callContextStorage: scopeFor(options.callContextStorage) });
  }
}

/** gRPC connection options for a cluster or Temporal Cloud (API key and/or mTLS), shared by client and worker. */
export function connectionOptions(config: Config, address: string): ConnectionOptions & { apiKey?: string } {
  const tls = config.temporal.tls;
  return {
    address,
    apiKey: config.temporal.apiKey,
    tls: tls
      ? {
          serverNameOverride: tls.serverName,
          serverRootCACertificate: tls.caPath ? readFileSync(tls.caPath) : undefined,
          clientCertPair: tls.certPath && tls.keyPath ? { crt: readFileSync(tls.certPath), key: readFileSync(tls.keyPath) } : undefined,
        }
      : undefined,
  };
}

/**
 * A client on the configured namespace. A connection that cannot be made is a ServiceError whatever
 * gRPC threw (it rejects some with a plain Error), so callers tell "Temporal is down" by type.
 */
export async function connectClient(config: Config, address: string): Promise<Client> {
  try {
    const connection = await ScopedConnection.connect({ ...connectionOptions(config, address), connectTimeout: '5s' });
    return new Client({ connection, namespace: config.temporal.namespace, interceptors: { workflow: workflowClientInterceptors() } });
  } catch (err) {
    if (err instanceof ServiceError) throw err;
    throw new ServiceError('Failed to connect to Temporal', { cause: err instanceof Error ? err : new Error(String(err)) });
  }
}

// Re-exported: the command clients and the ops CLI take it from here, resources from lib/.
export { temporalUiLink } from '../lib/temporal-ui';

/** The errors and their causes, outermost first (Temporal wraps: update/workflow failure → activity failure → application failure). */
function* causes(err: unknown): Generator<unknown> {
  for (let e: unknown = err, depth = 0; e !== undefined && e !== null && depth < 20; depth++) {
    yield e;
    e = e instanceof Error ? e.cause : undefined;
  }
}

/** The application failure at the root of a failed workflow, update or activity, if any. */
export function applicationFailure(err: unknown): ApplicationFailure | undefined {
  for (const e of causes(err)) if (e instanceof ApplicationFailure && e.type) return e;
  return undefined;
}

/** The `type` of that application failure: the error reason an activity or workflow threw. */
export function failureType(err: unknown): string | undefined {
  return applicationFailure(err)?.type ?? undefined;
}

/** True when a start failed only because that workflow id already ran or runs (idempotent starts). */
export function isAlreadyStarted(err: unknown): boolean {
  return err instanceof WorkflowExecutionAlreadyStartedError;
}

/** The gRPC status code of a service error, on it or on its cause. */
function grpcCode(err: unknown): number | undefined {
  for (const e of causes(err)) if (isGrpcServiceError(e)) return e.code;
  return undefined;
}

/** True when the workflow does not exist, or has completed (an update or signal to it then finds nothing). */
export function isNotFound(err: unknown): boolean {
  return err instanceof WorkflowNotFoundError || grpcCode(err) === GRPC.NOT_FOUND;
}

/**
 * True when the server aborted an update because the workflow task that took it failed before it was
 * recorded (WorkflowNotReady, FAILED_PRECONDITION): typically a task that closed the workflow while a
 * processor's notification came in (UnhandledCommand). Nothing of that task is in the history, so the
 * update can be sent again: it runs again, and what it does is idempotent (the same ids are minted, and
 * an attempt finds the charge the first run made).
 */
export function isAbortedUpdate(err: unknown): boolean {
  if (grpcCode(err) !== GRPC.FAILED_PRECONDITION) return false;
  return [...causes(err)].some((e) => /workflow task failure/i.test(e instanceof Error ? e.message : ''));
}

/** How many times an update the server aborted (isAbortedUpdate) is sent in all. */
const UPDATE_SENDS = 5;

/** Sends an update (or an update-with-start) again while the server aborts it (isAbortedUpdate). */
export async function resendingAborted<T>(send: () => Promise<T>): Promise<T> {
  for (let sent = 1; ; sent++) {
    try {
      return await send();
    } catch (err) {
      if (sent >= UPDATE_SENDS || !isAbortedUpdate(err)) throw err;
    }
  }
}

/** True when Temporal could not be reached or did not answer (not when it answered with a refusal). */
export function isTemporalUnavailable(err: unknown): boolean {
  if (err instanceof WorkflowNotFoundError) return false;
  // The worker's native connection reports a lost server as TransportError (core-bridge).
  if (err instanceof Error && err.name === 'TransportError') return true;
  // An update whose call ran out of time: the server did not answer (we never cancel one ourselves).
  if (err instanceof WorkflowUpdateRPCTimeoutOrCancelledError) return true;
  const code = grpcCode(err);
  if (code === GRPC.UNAVAILABLE || code === GRPC.DEADLINE_EXCEEDED) return true;
  return err instanceof ServiceError;
}

/** Temporal being unreachable, as the error catalogue says it: 503 temporal_unavailable, retry in 5 s; else undefined. */
export function temporalUnavailableError(err: unknown): ApiError | undefined {
  return isTemporalUnavailable(err) ? new ApiError('temporal_unavailable', undefined, {}, { 'Retry-After': '5' }) : undefined;
}

/**
 * Delivers a verified processor event to the workflow it concerns (a payment's or a refund's), as the
 * `providerEvent` signal. `workflow_closed` when that workflow has ended (or never existed): the event
 * is stored all the same and nothing waits for it. Temporal being unreachable throws (the processor
 * retries).
 */
export async function signalProviderEvent(client: Client, workflowId: string, event: ProviderEventSignal): Promise<'signalled' | 'workflow_closed'> {
  try {
    await client.workflow.getHandle(workflowId).signal(PROVIDER_EVENT_SIGNAL, event);
    return 'signalled';
  } catch (err) {
    if (isNotFound(err)) return 'workflow_closed';
    throw err;
  }
}
