import { Context } from '@temporalio/activity';

/**
 * Keeps an activity's heartbeat going while a provider call is in flight, so that a dead worker is
 * noticed within the heartbeat timeout and the attempt retried elsewhere (with the same idempotency key).
 */
export async function withHeartbeat<T>(work: Promise<T>): Promise<T> {
  let ctx: Context | undefined;
  try {
    ctx = Context.current();
  } catch {
    return work; // called outside an activity
  }
  // A local activity has no heartbeat: the worker keeps its workflow task alive instead.
  if (ctx.info.isLocal) return work;
  const timer = setInterval(() => ctx!.heartbeat(), 1000);
  try {
    return await work;
  } finally {
    clearInterval(timer);
  }
}
