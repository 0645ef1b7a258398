// The simulated processor's error answers, in one shape (`{ error: { code, message } }`) whichever part
// of it refuses: the books (ledger.ts, operations.ts) and the HTTP layer (server.ts) alike.

export class SimulatorError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message);
  }
}

export function errorBody(code: string, message: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { error: { code, message }, ...extra };
}
