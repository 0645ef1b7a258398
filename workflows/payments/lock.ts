import { condition } from '@temporalio/workflow';

/**
 * A mutex for workflow code, after Temporal's "safe message handlers" sample: the awaits of one holder
 * (activities, timers) cannot interleave with another's. Built on `condition`, so it adds no command to
 * the history. Taking a free lock is synchronous: a handler that takes it in its first line holds it
 * before any other message of the same activation is validated. It knows who holds it, so the table can
 * be asked whether the holder may leave the payment in a status.
 */
export class WorkflowLock<Holder extends string = string> {
  private holder: Holder | undefined;

  isLocked(): boolean {
    return this.holder !== undefined;
  }

  heldBy(): Holder | undefined {
    return this.holder;
  }

  /** The holder goes on as another (a confirm becomes its walk) without letting the lock go. */
  handOver(to: Holder): void {
    if (this.holder === undefined) throw new Error(`The lock is not held: it cannot be handed over to ${to}.`);
    this.holder = to;
  }

  async runExclusive<T>(holder: Holder, fn: () => Promise<T>): Promise<T> {
    // Every waiter wakes when the lock is released; the first to run takes it, the others wait again.
    while (this.holder !== undefined) await condition(() => this.holder === undefined);
    this.holder = holder;
    try {
      return await fn();
    } finally {
      this.holder = undefined;
    }
  }
}
