import { condition } from '@temporalio/workflow';

/**
 * A mutex for workflow code, after Temporal's "safe message handlers" sample: the awaits of one holder
 * (activities, timers) cannot interleave with another's. Built on `condition`, so it adds no command to
 * the history. Taking a free lock is synchronous: a handler that takes it in its first line holds it
 * before any other message of the same activation is validated.
 */
export class WorkflowLock {
  private held = false;

  isLocked(): boolean {
    return this.held;
  }

  async runExclusive<T>(fn: () => Promise<T>): Promise<T> {
    // Every waiter wakes when the lock is released; the first to run takes it, the others wait again.
    while (this.held) await condition(() => !this.held);
    this.held = true;
    try {
      return await fn();
    } finally {
      this.held = false;
    }
  }
}
