// The dispute rate behind the provider analytics (docs/routing.md): per provider config, the chargebacks
// opened in a range and the captured charges made in it. Read-only counts over `disputes` and `charges`;
// their writers are db/disputes.ts and the payment stores.

import type { Knex } from 'knex';
import { envTable, type Environment } from './environments';

/** One provider config's counts over [from, to). */
export interface DisputeRateRow {
  payment_provider_config_id: string;
  /** Disputes that are chargebacks (not inquiries or early fraud warnings) created in the range. */
  chargebacks: number;
  /** Charges made in the range that were captured (a refund since does not take one out). */
  captured_charges: number;
}

/**
 * Counts per provider config of the account, both sides in one round trip. A charge has no capture time
 * of its own, so a captured charge counts in the range it was made in; captures follow within the
 * authorization's validity, days at most, which a 31-day analytics range absorbs.
 */
export async function disputeRates(
  db: Knex, env: Environment, accountId: string, range: { from: Date; to: Date },
): Promise<DisputeRateRow[]> {
  const { rows } = await db.raw<{ rows: Record<string, unknown>[] }>(`
    WITH chargebacks AS (
      SELECT payment_provider_config_id, count(*) AS n FROM ?? d
      WHERE d.account_id = ? AND d.created_at >= ? AND d.created_at < ? AND NOT d.is_inquiry
      GROUP BY payment_provider_config_id
    ), captured AS (
      SELECT payment_provider_config_id, count(*) AS n FROM ?? c
      WHERE c.account_id = ? AND c.created_at >= ? AND c.created_at < ? AND c.captured_amount > 0
        AND c.payment_provider_config_id IS NOT NULL
      GROUP BY payment_provider_config_id
    )
    SELECT coalesce(b.payment_provider_config_id, c.payment_provider_config_id) AS payment_provider_config_id,
      coalesce(b.n, 0) AS chargebacks, coalesce(c.n, 0) AS captured_charges
    FROM chargebacks b FULL JOIN captured c ON c.payment_provider_config_id = b.payment_provider_config_id`,
  [envTable(env, 'disputes'), accountId, range.from, range.to, envTable(env, 'charges'), accountId, range.from, range.to]);
  return rows.map((r) => ({
    payment_provider_config_id: String(r.payment_provider_config_id),
    chargebacks: Number(r.chargebacks),
    captured_charges: Number(r.captured_charges),
  }));
}
