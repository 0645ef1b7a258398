// Moved to workflows/webhooks/contract.ts; this re-export goes once its last importers have switched.
export * from './webhooks/contract';
