/**
 * Disputes (docs/disputes.md): the workflow `dispute/<dp_id>`, its messages and the activities it calls.
 * Imported by the workflow (in Temporal's sandbox), by the API (which signals processor notifications in
 * and sends the merchant's answers as updates) and by the activities, so it stays free of Node and I/O.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { DisputeEvidence, DisputeStatus } from '../lib/providers/disputes';
import type { Environment, RequestContext } from './temporal';

export * from '../lib/providers/disputes';

export const disputeWorkflowId = (disputeId: string) => `dispute/${disputeId}`;

/** What a dispute's workflow is started with: the dispute and the config whose processor reported it. */
export interface DisputeInput {
  disputeId: string;
  environment: Environment;
  providerConfigId: string;
  processorDisputeId: string;
}

/** A processor's notification about the dispute, stored by POST /v1/provider-webhooks: the activity reads it by id. */
export interface DisputeEventSignal { eventId: string }

/** The merchant's answer (POST /v1/disputes/{id}/evidence, /accept), sealed by the API. */
export type DisputeAnswer =
  | { kind: 'evidence'; evidence: DisputeEvidence; submit: boolean }
  | { kind: 'accept' };

/**
 * An answer as it travels through Temporal: the evidence (the customer's name, email, addresses)
 * encrypted with the vault (`Vault.encryptJson`), so it never sits in the dispute's history as text. The
 * seal covers the answer as the API decided it (disputeAnswerText of the evidence itself).
 */
export type DisputeAnswerSent = { kind: 'evidence'; encryptedEvidence: string; submit: boolean } | { kind: 'accept' };

export interface SealedDisputeAnswer { answer: DisputeAnswerSent; seal?: string; context: RequestContext }

/** How an answer went: applied (the API reads the row), or refused (409 with why). */
export type DisputeAnswerResult = { applied: true } | { applied: false; code: string; message: string };

/** The workflow's view of the dispute's row, answered by every activity (epoch ms). */
export interface DisputeClock {
  exists: boolean;
  status: DisputeStatus | null;
  evidenceDueBy: number | null;
  submitted: boolean;
  /** The reminder (charge.dispute.evidence_due_soon) and the deadline's passing were recorded, each once. */
  reminded: boolean;
  overdue: boolean;
}

export interface DisputeRef { disputeId: string; environment: Environment }

export const disputeSignals = {
  /** A nudge: the activity applies the stored provider event only if it is about this dispute. */
  processorEvent: defineSignal<[DisputeEventSignal]>('processorEvent'),
};

export const disputeUpdates = {
  answer: defineUpdate<DisputeAnswerResult, [SealedDisputeAnswer]>('answer'),
};

export const disputeQueries = {
  state: defineQuery<DisputeClock | null>('state'),
};

/** The purpose of the API's seals on dispute answers (lib/vault.ts). */
export const DISPUTE_SEAL_PURPOSE = 'dispute-answer';

/** The text an answer's seal covers: the dispute, the update id and the answer. */
export function disputeAnswerText(disputeId: string, updateId: string, answer: DisputeAnswer): string {
  return JSON.stringify(['answer', disputeId, updateId, answer.kind === 'evidence'
    ? ['evidence', Object.entries(answer.evidence).sort(), answer.submit] : ['accept']]);
}

/** Days before the deadline the reminder goes (charge.dispute.evidence_due_soon). */
export const EVIDENCE_REMINDER_MS = 3 * 86_400_000;

export interface DisputeActivities {
  /** Applies a stored processor event to the dispute (creating its row from the first), once per event, never backwards. */
  applyDisputeEvent(ref: DisputeRef, input: DisputeInput, eventId: string): Promise<DisputeClock>;
  /** The row's view now. */
  readDispute(ref: DisputeRef): Promise<DisputeClock>;
  /** Records the reminder three days before the deadline (once), with charge.dispute.evidence_due_soon. */
  remindEvidenceDue(ref: DisputeRef): Promise<DisputeClock>;
  /** Marks the deadline passed without a submission (once): charge.dispute.updated and a notification to the account. */
  markEvidenceOverdue(ref: DisputeRef): Promise<DisputeClock>;
  /** Saves evidence, and with `submit` sends it through the connector; or accepts. Checks the seal; refuses after the deadline or twice. */
  answerDispute(ref: DisputeRef, updateId: string, answer: SealedDisputeAnswer): Promise<{ result: DisputeAnswerResult; clock: DisputeClock }>;
}
