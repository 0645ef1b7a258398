export { createSandboxAdapter, DEFAULT_TIMEOUT_MS, DEFAULT_CONNECT_TIMEOUT_MS } from './adapter';
export type { SandboxAdapter, SandboxAdapterOptions } from './adapter';
export type { SandboxCredentials } from '../../../lib/providers/sandbox';
export { DECLINE_CODES, declineDecision } from './decline-codes';
export type { DeclineDecision } from './decline-codes';
export { parseSandboxWebhook, SANDBOX_WEBHOOK_REPLY, SIGNATURE_TOLERANCE_SECONDS, signatureProblem, simulatorSignature } from './notifications';
