import type { Client as PgClient } from 'pg';
import { context as otelContext, ROOT_CONTEXT, trace, TraceFlags, type Context as OtelContext } from '@opentelemetry/api';
import { claimDueEvents, EVENTS_DUE_CHANNEL, fanOutLater, markFannedOut, type EventRow } from '../../db/events';
import { ownConnection, type Db } from '../../db/knex';
import { ENV_SCHEMAS, type Environment } from '../../db/environments';
import { logger } from '../../lib/logger';
import type { EventFanOut } from './fan-out';

/**
 * The event dispatcher: the webhooks' side of the outbox (docs/webhooks.md#the-outbox-how-events-leave).
 * The statement that writes an event an endpoint listens to marks it due; this claims due events, fans
 * each out (deliveries, their first attempts, workflows for the rest) and clears the mark. So no workflow
 * waits for a fan-out or schedules one, and an event is never lost: one whose dispatcher died is due
 * again when its lease ends, and the fan-out is idempotent.
 */

export interface DispatcherOptions {
  /** Events claimed at once: at most this many fan out side by side, each with its first attempts. */
  batch?: number;
  /** Batches in flight at once. */
  inFlight?: number;
  /** How long a claim holds its events: past it another dispatcher takes them. Longer than a fan-out takes. */
  leaseMs?: number;
  /** The poll between notifications: what finds events whose lease ended, or a notification lost. */
  pollMs?: number;
  /** The wait before a failed fan-out is tried again. */
  retryMs?: number;
}

export interface EventDispatcher {
  /** Runs until stop(): listens, claims and fans out; resolves once the fan-outs in flight have ended. */
  run(): Promise<void>;
  stop(): void;
}

const DEFAULTS: Required<DispatcherOptions> = { batch: 10, inFlight: 4, leaseMs: 30_000, pollMs: 1_000, retryMs: 5_000 };

export function eventDispatcher(db: Db, fanOut: EventFanOut, options: DispatcherOptions = {}): EventDispatcher {
  const { batch, inFlight: maxInFlight, leaseMs, pollMs, retryMs } = { ...DEFAULTS, ...options };
  const wakeup = new Wakeup();
  const running = new Set<Promise<void>>();
  /** Environments with events left unclaimed because every batch slot was taken: claimed again when one frees. */
  const heldBack = new Set<Environment>();
  let stopped = false;

  /** One claimed batch: each event fans out in the trace that caused it; the batch is cleared or put off as one. */
  function dispatch(env: Environment, events: EventRow[]): void {
    const ids = events.map((e) => e.id);
    const done = Promise.all(events.map((event) => otelContext.with(causedBy(event), () => tracedFanOut(fanOut, env, event))))
      .then(() => markFannedOut(db, env, ids), async (err: unknown) => {
        logger.warn({ err, event_ids: ids }, 'an event fan-out failed; its events are due again shortly');
        await fanOutLater(db, env, ids, retryMs);
      })
      .catch((err: unknown) => logger.warn({ err, event_ids: ids }, 'an event fan-out could not be recorded; its lease will free its events'))
      .finally(() => {
        running.delete(done);
        for (const held of heldBack) wakeup.wake(held);
        heldBack.clear();
      });
    running.add(done);
  }

  /** Claims batches of the environments given while there is room; a batch slot short, the rest waits for one. */
  async function claim(envs: Environment[]): Promise<void> {
    for (const env of envs) {
      while (!stopped) {
        if (running.size >= maxInFlight) {
          heldBack.add(env);
          break;
        }
        const events = await claimDueEvents(db, env, batch, leaseMs);
        if (events.length) dispatch(env, events);
        if (events.length < batch) break;
      }
    }
  }

  return {
    async run() {
      const listener = new Listener(db, (schema) => wakeup.wake(environmentOfSchema(schema)));
      listener.start();
      let envs = ENVIRONMENTS;
      while (!stopped) {
        await claim(envs).catch((err: unknown) => logger.warn({ err }, 'claiming due events failed; trying again on the next poll'));
        envs = await wakeup.wait(pollMs);
      }
      await Promise.all(running);
      await listener.stop();
    },
    stop() {
      stopped = true;
      wakeup.wake();
    },
  };
}

/** The fan-out of one event under a span of its own. */
async function tracedFanOut(fanOut: EventFanOut, env: Environment, event: EventRow): Promise<void> {
  await trace.getTracer('switchboard').startActiveSpan('fanOutEvents', { attributes: { 'switchboard.event_id': event.id } }, async (span) => {
    try {
      await fanOut(env, [event]);
    } finally {
      span.end();
    }
  });
}

/** The context of the span that caused an event (the API request), so that its fan-out continues that trace. */
function causedBy(event: EventRow): OtelContext {
  const { trace_id: traceId, span_id: spanId } = event;
  if (!traceId || !spanId) return ROOT_CONTEXT;
  const parent = { traceId, spanId, traceFlags: TraceFlags.SAMPLED, isRemote: true };
  return trace.isSpanContextValid(parent) ? trace.setSpanContext(ROOT_CONTEXT, parent) : ROOT_CONTEXT;
}

const ENVIRONMENTS = Object.keys(ENV_SCHEMAS) as Environment[];

/** The environment whose schema a notification names; every one for a payload we do not know. */
function environmentOfSchema(schema: string): Environment | undefined {
  return ENVIRONMENTS.find((env) => ENV_SCHEMAS[env] === schema);
}

/**
 * A sleep that a notification, a freed batch slot or stop() cuts short, answering the environments to
 * claim: those woken for, or every one when the poll's time ran out. A wake with no one waiting is kept.
 */
class Wakeup {
  private readonly due = new Set<Environment>();
  private resolve?: () => void;

  /** `env` undefined: every environment. */
  wake(env?: Environment): void {
    for (const e of env ? [env] : ENVIRONMENTS) this.due.add(e);
    this.resolve?.();
  }

  async wait(ms: number): Promise<Environment[]> {
    if (!this.due.size) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        this.resolve = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    this.resolve = undefined;
    const due = this.due.size ? [...this.due] : ENVIRONMENTS;
    this.due.clear();
    return due;
  }
}

/**
 * LISTEN on the channel migration 026's trigger notifies when events fall due, on a connection of its
 * own. A dropped connection is opened again after a second; the poll covers the gap.
 */
class Listener {
  private client?: PgClient;
  private stopped = false;

  constructor(private readonly db: Db, private readonly onNotice: (schema: string) => void) {}

  start(): void {
    const client = ownConnection(this.db, 'events');
    this.client = client;
    client.on('notification', (notice) => this.onNotice(notice.payload ?? ''));
    client.on('error', (err) => {
      logger.warn({ err }, 'the event dispatcher\'s listening connection failed; it polls until it is back');
      void this.restart(client);
    });
    client.connect().then(() => client.query(`LISTEN ${EVENTS_DUE_CHANNEL}`)).catch((err: unknown) => {
      logger.warn({ err }, 'the event dispatcher could not listen for due events; it polls until it can');
      void this.restart(client);
    });
  }

  private async restart(failed: PgClient): Promise<void> {
    if (this.client !== failed) return;
    this.client = undefined;
    await failed.end().catch(() => undefined);
    if (!this.stopped) setTimeout(() => !this.stopped && this.start(), 1_000).unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.client?.end().catch(() => undefined);
  }
}
