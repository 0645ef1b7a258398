// Moved to db/events.ts (the events store); this re-export goes once payments, refunds and API keys import it there.
export { appendEvents, idsToPublish, type EventRecord } from '../db/events';
