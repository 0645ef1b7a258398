// Moved to db/payment-methods.ts; re-exported until its last importers switch.
export * from '../payment-methods';
