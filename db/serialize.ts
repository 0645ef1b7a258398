/**
 * Row → API resource shapes. Shared by the API (responses) and the worker (webhook payloads), so a
 * resource looks the same wherever it appears. Timestamps are ISO-8601 UTC with milliseconds.
 */
// Moved to api/resources/customers.ts; re-exported until db/repositories/payments.ts reads it there.
export { serializeCustomer } from '../api/resources/customers';
