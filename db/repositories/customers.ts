// Moved to db/customers.ts; re-exported until the payment code reads it there.
export * from '../customers';
