// Moved to db/providers.ts (configs, credentials, routing inputs), db/fees-and-rules.ts and
// lib/group-by.ts. Kept only so that importers not yet switched still compile; delete when none is left.
export { loadRoutingInputs, loadProviderCredentials as loadConfigCredentials } from '../providers';
export type { RoutingInputConfig, RoutingInputMethod, RoutingInputProvider, RoutingInputs } from '../providers';
export { groupBy } from '../../lib/group-by';
export { feesAndRulesOf as configEmbeds } from '../fees-and-rules';
