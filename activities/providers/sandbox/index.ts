export { createSandboxAdapter, DEFAULT_TIMEOUT_MS, DEFAULT_CONNECT_TIMEOUT_MS } from './adapter';
export type { SandboxAdapter, SandboxAdapterOptions } from './adapter';
export type { SandboxCredentials } from '../../../lib/providers/sandbox/credentials';
export { DECLINE_CODES, declineDecision } from '../../../lib/providers/sandbox/decline-codes';
export type { DeclineDecision } from '../../../lib/providers/sandbox/decline-codes';
export { parseSandboxWebhook, SANDBOX_WEBHOOK_REPLY, SIGNATURE_TOLERANCE_SECONDS, signatureProblem, simulatorSignature } from '../../../lib/providers/sandbox/notifications';
