export { createSandboxAdapter, DEFAULT_TIMEOUT_MS, DEFAULT_CONNECT_TIMEOUT_MS } from './adapter';
export type { SandboxAdapter, SandboxAdapterOptions } from './adapter';
export { SANDBOX_IDENTIFIER, SANDBOX_DEFAULT_METHODS, SANDBOX_CAPABILITIES, SandboxCredentialsSchema } from './catalogue';
export type { SandboxCredentials } from './catalogue';
export { DECLINE_CODES, declineDecision } from './decline-codes';
export type { DeclineDecision } from './decline-codes';
