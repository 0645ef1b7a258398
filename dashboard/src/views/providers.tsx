import { useMemo } from 'preact/hooks';
import type { CircuitState, Client, DisputeRate, ProviderAnalytics, ProviderAnalyticsView } from '../api';
import { type ChartSeries, TimeChart } from '../chart';
import { Empty, ErrorState, Id, Loading, Section, useResource } from '../components';
import { count, duration, percent, when } from '../format';
import { navigate, qs } from '../router';

/** The ranges offered, each with the bucket size that gives a readable number of points. */
const RANGES = {
  '1h': { label: 'Last hour', interval: 'minute', bucketMs: 60_000, buckets: 60 },
  '24h': { label: 'Last 24 hours', interval: 'hour', bucketMs: 3_600_000, buckets: 24 },
  '7d': { label: 'Last 7 days', interval: 'day', bucketMs: 86_400_000, buckets: 7 },
} as const;
type Range = keyof typeof RANGES;

/** [from, to) ending with the bucket that is under way (buckets start on UTC boundaries), so the last point fills in as it happens. */
function rangeWindow(range: Range, now = Date.now()): { from: string; to: string; interval: ProviderAnalytics['interval'] } {
  const { interval, bucketMs, buckets } = RANGES[range];
  const to = Math.floor(now / bucketMs) * bucketMs + bucketMs;
  return { from: new Date(to - buckets * bucketMs).toISOString(), to: new Date(to).toISOString(), interval };
}

// Okabe–Ito: told apart with the common colour-vision deficiencies; a provider keeps its colour on cards and charts.
const COLORS = ['#0072b2', '#d55e00', '#009e73', '#cc79a7', '#e69f00', '#56b4e9', '#000000'];
const colorOf = (i: number) => COLORS[i % COLORS.length];

const TIME_LABELS: Record<ProviderAnalytics['interval'], Intl.DateTimeFormat> = {
  minute: new Intl.DateTimeFormat('en-US', { hour: '2-digit', minute: '2-digit' }),
  hour: new Intl.DateTimeFormat('en-US', { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' }),
  // Day buckets are UTC days: named as such, or a UTC midnight reads as the evening before west of Greenwich.
  day: new Intl.DateTimeFormat('en-US', { weekday: 'short', month: 'short', day: 'numeric', timeZone: 'UTC' }),
};

const CIRCUIT: Record<CircuitState, { label: string; tone: string; note: string }> = {
  closed: { label: 'Circuit closed', tone: 'green', note: 'Routed normally.' },
  half_open: { label: 'Circuit half open', tone: 'amber', note: 'Cooled down: a share of payments probes it before it is routed normally again.' },
  open: { label: 'Circuit open', tone: 'red', note: 'Too many errors: routing skips it until its cool-down ends.' },
};

export function Providers({ api, query, onUnauthorized }: { api: Client; query: URLSearchParams; onUnauthorized: () => void }) {
  const asked = query.get('range') ?? '';
  const range: Range = Object.hasOwn(RANGES, asked) ? (asked as Range) : '1h';
  const res = useResource(() => api.providerAnalytics(rangeWindow(range)), [api.accountId, range], onUnauthorized);
  const charts = useMemo(() => (res.data ? chartData(res.data) : null), [res.data]);
  const a = res.data;

  return (
    <div class="page">
      <div class="page-header">
        <div>
          <h1>Providers</h1>
          <div class="detail-sub">
            {a ? <>{when(a.from)} – {when(a.to)} · one point per {a.interval === 'day' ? 'day (UTC)' : a.interval}</> : 'Health, approval rate and latency per provider config'}
          </div>
        </div>
        <div class="detail-actions">
          <div class="filters" role="group" aria-label="Range">
            {(Object.keys(RANGES) as Range[]).map((r) => (
              <button type="button" key={r} class={`pill ${r === range ? 'active' : ''}`} aria-pressed={r === range}
                onClick={() => navigate(`/providers${qs({ range: r === '1h' ? undefined : r })}`)}>{RANGES[r].label}</button>
            ))}
          </div>
          <button type="button" class="btn btn-secondary" onClick={res.reload}>Refresh</button>
        </div>
      </div>

      {res.error ? <ErrorState error={res.error} retry={res.reload} />
        : !a || !charts ? <Loading />
        : a.providers.length === 0 ? (
          <Section title="Providers"><Empty title="No provider activity in this range">Charges made through your provider configs show up here.</Empty></Section>
        ) : (
          <div class="page" aria-busy={res.loading}>
            <div class="health-grid" data-testid="provider-health">
              {a.providers.map((p, i) => <HealthCard key={p.provider_config_id} provider={p} color={colorOf(i)} />)}
            </div>
            <div class="chart-grid">
              <TimeChart id="approval-chart" testId="approval-chart" title="Approval rate" times={charts.times} series={charts.approval}
                description={`Approvals ÷ (attempts − hard declines) per ${a.interval}, per provider config. Hard declines are the card's, not the provider's; a gap is a ${a.interval} without attempts.`}
                format={(v) => `${Math.round(v * 10) / 10}%`} timeLabel={(t) => TIME_LABELS[a.interval].format(t)} max={100} utc={a.interval === 'day'} />
              <TimeChart id="latency-chart" testId="latency-chart" title="Latency" times={charts.times} series={charts.latency}
                description={`Mean (solid) and 95th percentile (dashed) duration of the authorize calls per ${a.interval}, per provider config.`}
                format={(v) => duration(v)} timeLabel={(t) => TIME_LABELS[a.interval].format(t)} utc={a.interval === 'day'} />
            </div>
          </div>
        )}
    </div>
  );
}

type ProviderRow = ProviderAnalyticsView['providers'][number];

function HealthCard({ provider: p, color }: { provider: ProviderRow; color: string }) {
  const t = p.totals;
  const circuit = CIRCUIT[p.circuit] ?? { label: `Circuit ${p.circuit}`, tone: 'grey', note: '' };
  const headingId = `health-${p.provider_config_id}`;
  return (
    <article class={`card health health-${p.circuit}`} data-provider={p.provider_config_id} aria-labelledby={headingId}>
      <header class="health-header">
        <span class="swatch" style={{ background: color }} aria-hidden="true" />
        <div class="health-name">
          <h2 id={headingId}>{p.name}</h2>
          <Id value={p.provider_config_id} />
        </div>
        <span class={`badge badge-${circuit.tone}`} data-circuit={p.circuit}>{circuit.label}</span>
      </header>
      <p class="health-circuit muted small">{circuit.note}</p>
      <div class="health-rate">
        <span class="health-rate-value" data-testid="approval-rate">{percent(t.approval_rate)}</span>
        <span>approval rate<span class="muted small"> · {count(t.approvals)} of {count(t.attempts - t.hard_declines)} without a hard decline</span></span>
      </div>
      <dl class="health-facts">
        <Fact label="Attempts" value={count(t.attempts)} />
        <Fact label="Approved" value={count(t.approvals)} />
        <Fact label="Hard declines" value={count(t.hard_declines)} />
        <Fact label="Soft declines" value={count(t.soft_declines)} />
        <Fact label="Transport errors" value={count(t.transport_errors)} alert={t.transport_errors > 0} />
        <Fact label="Unknown outcomes" value={count(t.unknown)} alert={t.unknown > 0} />
      </dl>
      <dl class="health-facts health-latency" aria-label="Latency">
        <Fact label="Mean" value={duration(t.latency_ms.mean)} />
        <Fact label="p50" value={duration(t.latency_ms.p50)} />
        <Fact label="p95" value={duration(t.latency_ms.p95)} />
        <Fact label="p99" value={duration(t.latency_ms.p99)} />
      </dl>
      {p.disputes ? <Disputes rate={p.disputes} /> : null}
    </article>
  );
}

// Card schemes put a merchant in a monitoring programme from about 0.9% (Visa's VAMP counts from 0.9%, Mastercard's ECM 1.5%): flagged here from there.
const DISPUTE_RATE_ALERT = 0.009;

function Disputes({ rate: r }: { rate: DisputeRate }) {
  const alert = r.dispute_rate !== null && r.dispute_rate >= DISPUTE_RATE_ALERT;
  return (
    <dl class="health-facts health-disputes" aria-label="Disputes" data-testid="dispute-rate" title="Chargebacks opened in the range ÷ charges captured in it (inquiries are not chargebacks)">
      <Fact label="Dispute rate" value={r.dispute_rate === null ? '—' : `${(r.dispute_rate * 100).toFixed(2)}%`} alert={alert} />
      <Fact label="Chargebacks" value={count(r.chargebacks)} alert={r.chargebacks > 0} />
      <Fact label="Captured charges" value={count(r.captured_charges)} />
    </dl>
  );
}

function Fact({ label, value, alert }: { label: string; value: string; alert?: boolean }) {
  return <div data-fact={label}><dt>{label}</dt><dd class={alert ? 'alert' : ''}>{value}</dd></div>;
}

/** One time axis for all providers (a bucket missing from a provider's series is a gap in its line). */
function chartData(a: ProviderAnalyticsView): { times: number[]; approval: ChartSeries[]; latency: ChartSeries[] } {
  const times = [...new Set(a.providers.flatMap((p) => p.series.map((s) => Date.parse(s.at))))].sort((x, y) => x - y);
  const approval: ChartSeries[] = [];
  const latency: ChartSeries[] = [];
  a.providers.forEach((p, i) => {
    const byTime = new Map(p.series.map((s) => [Date.parse(s.at), s]));
    const values = (pick: (s: ProviderRow['series'][number]) => number | null) => times.map((t) => {
      const s = byTime.get(t);
      return s ? pick(s) : null;
    });
    approval.push({ label: p.name, color: colorOf(i), values: values((s) => (s.approval_rate === null ? null : s.approval_rate * 100)) });
    latency.push(
      { label: `${p.name} mean`, color: colorOf(i), values: values((s) => s.latency_ms.mean) },
      { label: `${p.name} p95`, color: colorOf(i), dashed: true, values: values((s) => s.latency_ms.p95) },
    );
  });
  return { times, approval, latency };
}
