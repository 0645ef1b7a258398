import type { Knex } from 'knex';
import { ENV_SCHEMAS } from '../environments';

const KEY = ['payment_provider_config_id', 'minute', 'card_network', 'currency'];
const COUNTERS = ['attempts', 'approvals', 'hard_declines', 'soft_declines', 'transport_errors', 'unknown', 'latency_ms_sum'];

/**
 * `provider_health` gets a `shard` in its key (db/provider-health.ts, `HEALTH_SHARDS`). Every outcome
 * recorded at one config in one minute added to the same row, and a row's lock is held until its
 * transaction commits: concurrent payments at one provider waited on each other's commits, up to 36 ms
 * each at sixteen at once (docs/performance-log.md). Each connection now counts into the shard its
 * backend's pid picks, so transactions running side by side add to different rows; readers sum them.
 */
export async function up(knex: Knex): Promise<void> {
  for (const schema of Object.values(ENV_SCHEMAS)) {
    await knex.raw(`ALTER TABLE ??.provider_health ADD COLUMN shard smallint NOT NULL DEFAULT 0,
      DROP CONSTRAINT provider_health_pkey, ADD CONSTRAINT provider_health_pkey PRIMARY KEY (${KEY.join(', ')}, shard)`, [schema]);
  }
}

/** Folds every shard into shard 0 (sums, maxima, the histograms bucket by bucket), then drops the column. */
export async function down(knex: Knex): Promise<void> {
  const sameKey = KEY.map((c) => `m2.${c} = m.${c}`).join(' AND ');
  for (const schema of Object.values(ENV_SCHEMAS)) {
    await knex.raw(`
      WITH moved AS (DELETE FROM ??.provider_health WHERE shard <> 0 RETURNING *)
      INSERT INTO ??.provider_health AS h (${KEY.join(', ')}, account_id, ${COUNTERS.join(', ')}, latency_ms_max, latency_buckets, last_error_at, shard)
      SELECT ${KEY.map((c) => `m.${c}`).join(', ')}, min(m.account_id), ${COUNTERS.map((c) => `sum(m.${c})`).join(', ')}, max(m.latency_ms_max),
        (SELECT array_agg(s ORDER BY i) FROM (SELECT u.i, sum(u.b)::integer AS s FROM moved m2, unnest(m2.latency_buckets) WITH ORDINALITY AS u(b, i)
          WHERE ${sameKey} GROUP BY u.i) AS buckets),
        max(m.last_error_at), 0
      FROM moved m GROUP BY ${KEY.map((c) => `m.${c}`).join(', ')}
      ON CONFLICT (${KEY.join(', ')}, shard) DO UPDATE SET
        ${COUNTERS.map((c) => `${c} = h.${c} + EXCLUDED.${c}`).join(', ')},
        latency_ms_max = GREATEST(h.latency_ms_max, EXCLUDED.latency_ms_max),
        latency_buckets = (SELECT array_agg(a + b ORDER BY i) FROM unnest(h.latency_buckets, EXCLUDED.latency_buckets) WITH ORDINALITY AS u(a, b, i)),
        last_error_at = GREATEST(h.last_error_at, EXCLUDED.last_error_at)`, [schema, schema]);
    await knex.raw(`ALTER TABLE ??.provider_health DROP CONSTRAINT provider_health_pkey,
      ADD CONSTRAINT provider_health_pkey PRIMARY KEY (${KEY.join(', ')}), DROP COLUMN shard`, [schema]);
  }
}
