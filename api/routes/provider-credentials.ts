// A provider config's credentials decide where its account's money settles (docs/security.md §15): on a
// live config, who may set them, and for every config, that they are of the config's environment.

import type { Environment } from '../../db/environments';
import type { Db } from '../../db/knex';
import { findPaymentProvider } from '../../db/providers';
import { catalogueEntry, isAdapterIdentifier } from '../../lib/providers/catalogue';
import { compileCredentialsSchema, credentialsErrors, type SchemaFieldError } from '../../lib/providers/credentials';
import type { Access, AccountScope } from '../auth/access';
import { ApiError } from '../errors';

const ROOT = 'body/credentials';

/**
 * Setting a live config's credentials (creating one, replacing them) needs `provider:credentials:write`
 * (OWNER and ADMIN) beyond `routing:write`: a DEVELOPER or a narrow key could otherwise point live money
 * at an account of its own, or at a test key. Checked before the credentials are read, so the refusal
 * tells nothing about them. Sandbox configs move no money: `routing:write` is enough there.
 */
export function requireCredentialsRight(access: Access, scope: Pick<AccountScope, 'permissions'>, env: Environment): void {
  if (env === 'production') access.require(scope, 'provider:credentials:write', 'Setting a live config\'s credentials');
}

/**
 * 400 with paths under body/credentials when the credentials break the provider's credentials schema, or
 * are not of the config's environment (a live key in a sandbox, a test key live: the adapter's rule).
 */
export async function checkCredentials(db: Db, env: Environment, providerId: string, credentials: unknown): Promise<void> {
  const provider = await findPaymentProvider(db, env, providerId);
  if (!provider) throw ApiError.notFound('payment provider');
  const adapter = isAdapterIdentifier(provider.identifier) ? catalogueEntry(provider.identifier) : undefined;
  const schema = provider.schemas?.credentials ?? adapter?.credentialsSchema;
  const errors: SchemaFieldError[] = [];
  if (schema !== undefined) {
    const compiled = compileCredentialsSchema(schema);
    // Schemas are compiled when a provider is registered, so this is a broken row, not a bad request.
    if (!compiled.ok) throw new Error(`payment provider ${providerId} has an invalid credentials schema: ${compiled.error}`);
    errors.push(...credentialsErrors(compiled.validate, credentials, ROOT));
  }
  if (!errors.length && adapter?.credentialsErrors) {
    if (typeof credentials !== 'object' || credentials === null || Array.isArray(credentials)) {
      throw ApiError.validation([{ path: ROOT, message: 'must be an object' }]);
    }
    const providerConfig = (provider.config ?? {}) as Record<string, unknown>;
    errors.push(...adapter.credentialsErrors(credentials as Record<string, unknown>, env === 'sandbox', ROOT, providerConfig));
  }
  if (errors.length) throw ApiError.validation(errors);
}
