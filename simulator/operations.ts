// The simulated processor's idempotency: the first answer given under every idempotency key (so a
// repeated key never moves money twice, and the operation look-up can tell a caller what happened), and
// the per-key call counters the inspection API shows. Apart from ledger.ts, which holds the charges and
// refunds those answers are about.

import { createHmac, randomBytes } from 'node:crypto';
import { SimulatorError } from './errors';

export type Operation = 'authorize' | 'capture' | 'void' | 'refund' | 'dispute_evidence' | 'dispute_accept';

export interface Answer {
  status: number;
  body: unknown;
}

export interface OperationRecord {
  operation: Operation;
  fingerprint: string;
  answer: Answer;
  chargeId?: string;
  /** The stored-credential facts the request carried (authorize only), for the inspection API. */
  storedCredential?: unknown;
}

interface KeyCounters {
  calls: number;
  lookups: number;
}

export class Operations {
  private operations = new Map<string, OperationRecord>();
  private counters = new Map<string, KeyCounters>();
  private totalCalls = 0;
  // Fingerprints compare request bodies without keeping them (an authorize body holds a PAN).
  private readonly fingerprintKey = randomBytes(32);

  /** Every /v1 request counts, even those that fail (an outage, a missing api key). */
  countCall(key: string | undefined): void {
    this.totalCalls++;
    if (key) this.countersOf(key).calls++;
  }

  countLookup(key: string): void {
    this.countersOf(key).lookups++;
  }

  fingerprint(operation: string, target: string, body: unknown): string {
    return createHmac('sha256', this.fingerprintKey).update(`${operation}\n${target}\n${JSON.stringify(body)}`).digest('hex');
  }

  /** The first answer for this key, or undefined if the key is new. A different request under it → 422. */
  replay(key: string, fingerprint: string): Answer | undefined {
    const record = this.operations.get(key);
    if (!record) return undefined;
    if (record.fingerprint !== fingerprint) {
      throw new SimulatorError(422, 'idempotency_key_reused', 'this idempotency key was used for a different request');
    }
    return record.answer;
  }

  record(key: string, operation: Operation, fingerprint: string, answer: Answer, chargeId?: string, storedCredential?: unknown): Answer {
    this.operations.set(key, { operation, fingerprint, answer, chargeId, ...(storedCredential ? { storedCredential } : {}) });
    return answer;
  }

  find(key: string): OperationRecord | undefined {
    return this.operations.get(key);
  }

  keyStats(key: string) {
    const counters = this.counters.get(key) ?? { calls: 0, lookups: 0 };
    const record = this.operations.get(key);
    return {
      idempotency_key: key,
      calls: counters.calls,
      lookups: counters.lookups,
      operation: record?.operation ?? null,
      status_code: record?.answer.status ?? null,
      charge_id: record?.chargeId ?? null,
      /** The flags the operation's request carried (model, initiator, network_transaction_id), null for none. */
      stored_credential: record?.storedCredential ?? null,
    };
  }

  stats(): { calls: number; idempotency_keys: number } {
    return { calls: this.totalCalls, idempotency_keys: this.operations.size };
  }

  reset(): void {
    this.operations.clear();
    this.counters.clear();
    this.totalCalls = 0;
  }

  private countersOf(key: string): KeyCounters {
    const counters = this.counters.get(key) ?? { calls: 0, lookups: 0 };
    this.counters.set(key, counters);
    return counters;
  }
}
