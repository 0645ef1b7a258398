import type { Knex } from 'knex';

/** The permissions that joined the catalogue held by OWNER and ADMIN only (docs/security.md §15, §17, §19). */
const ADDED: Record<string, string[]> = {
  'provider:credentials': ['write'],
  'account:settings': ['write'],
  audit: ['read'],
};

/**
 * The managed secret key an account is made with holds every permission, so the existing ones get the
 * new ones too; every other key keeps what it was given (a key made narrow stays narrow, and a
 * DEVELOPER's keys never held them).
 */
export async function up(knex: Knex): Promise<void> {
  for (const [scope, actions] of Object.entries(ADDED)) {
    await knex.raw(`UPDATE core.api_keys SET permissions = permissions || jsonb_build_object(?::text, ?::jsonb)
      WHERE managed AND type = 'SECRET' AND permissions -> ?::text IS NULL`, [scope, JSON.stringify(actions), scope]);
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const scope of Object.keys(ADDED)) {
    await knex.raw(`UPDATE core.api_keys SET permissions = permissions - ?::text WHERE managed AND type = 'SECRET'`, [scope]);
  }
}
