// knex ships no types for its dialects' clients; the Postgres one is a Knex.Client (db/knex.ts extends it).
declare module 'knex/lib/dialects/postgres' {
  import type { Knex } from 'knex';
  const PostgresClient: typeof Knex.Client;
  export = PostgresClient;
}
