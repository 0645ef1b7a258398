import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';

const ROOT = join(__dirname, '..', '..');
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');
const compose = parse(read('docker-compose.yml'), { merge: true });
const services = compose.services as Record<string, any>;

/** The series the API and the worker export (docs/observability.md "Metrics"); the Temporal SDK's are `temporal_*`. */
const METRICS = new Set([
  'http_requests_total', 'http_request_duration_seconds_bucket', 'idempotency_replays_total', 'rate_limit_rejections_total',
  'payment_transitions_total', 'provider_calls_total', 'provider_call_duration_seconds_bucket', 'refunds_total',
  'webhook_delivery_attempts_total', 'webhook_deliveries_pending', 'webhook_deliveries_dead_lettered',
  'temporal_workflow_task_schedule_to_start_latency_bucket', 'temporal_activity_schedule_to_start_latency_bucket',
  'temporal_worker_task_slots_available', 'temporal_sticky_cache_size',
]);
const PROMQL_WORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'and', 'or', 'unless', 'bool', 'offset']);

/**
 * The metric names a PromQL expression selects: label matchers, strings, ranges and grouping clauses
 * removed, then every identifier that is not a function call or a keyword. No promtool here to parse it.
 */
function metricsIn(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, '')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '');
  return [...bare.matchAll(/(?<![\w.])([a-zA-Z_:][\w:]*)(?![\w:]|\s*\()/g)].map((m) => m[1]).filter((name) => !PROMQL_WORDS.has(name));
}

const prometheus = parse(read('docker/prometheus/prometheus.yml'));
const alerts = parse(read('docker/prometheus/alerts.yml'));
const rules: { alert: string; expr: string; for?: string }[] = alerts.groups.flatMap((group: { rules: unknown[] }) => group.rules);
const dashboard = JSON.parse(read('docker/grafana/dashboards/switchboard.json'));
const panels: { title: string; targets: { expr: string }[] }[] = dashboard.panels;

describe('the observability compose profile', () => {
  it('puts Prometheus, Grafana and Jaeger in the opt-in profile, pinned, published on 127.0.0.1 only', () => {
    for (const name of ['prometheus', 'grafana', 'jaeger']) {
      expect(services[name].profiles, name).toEqual(['observability']);
      expect(services[name].image, name).toMatch(/^[\w/-]+:v?\d+\.\d+\.\d+$/);
      for (const port of services[name].ports) expect(String(port), name).toMatch(/^127\.0\.0\.1:\d+:\d+$/);
    }
    // The rest of the stack runs without the profile.
    for (const [name, service] of Object.entries(services)) {
      if (!['prometheus', 'grafana', 'jaeger'].includes(name)) expect(service.profiles, name).toBeUndefined();
    }
  });

  it('mounts the files it names, and the worker exposes its metrics port inside the network only', () => {
    expect(services.prometheus.volumes).toContain('./docker/prometheus:/etc/prometheus:ro');
    expect(services.grafana.volumes).toEqual(expect.arrayContaining([
      './docker/grafana/provisioning:/etc/grafana/provisioning:ro', './docker/grafana/dashboards:/var/lib/grafana/dashboards:ro',
    ]));
    expect(services.worker.expose).toEqual(['9464', '9465']);
    expect(services.worker.ports).toBeUndefined();
    const datasource = parse(read('docker/grafana/provisioning/datasources/prometheus.yml'));
    expect(datasource.datasources[0]).toMatchObject({ type: 'prometheus', uid: 'prometheus', url: 'http://prometheus:9090' });
    const provider = parse(read('docker/grafana/provisioning/dashboards/switchboard.yml'));
    expect(provider.providers[0].options.path).toBe('/var/lib/grafana/dashboards');
  });

  it('scrapes the API and every worker replica, and loads the alert rules', () => {
    const jobs = Object.fromEntries(prometheus.scrape_configs.map((job: { job_name: string }) => [job.job_name, job]));
    expect(jobs['switchboard-api'].static_configs[0].targets).toEqual(['api:3000']);
    expect(jobs['switchboard-worker'].dns_sd_configs[0]).toMatchObject({ names: ['worker'], type: 'A', port: 9464 });
    expect(jobs['temporal-sdk-worker'].dns_sd_configs[0]).toMatchObject({ names: ['worker'], type: 'A', port: 9465 });
    expect(prometheus.rule_files).toEqual(['/etc/prometheus/alerts.yml']);
  });
});

describe('alert rules', () => {
  it('alert on approval rate, dead letters, waiting tasks and 5xx', () => {
    expect(rules.map((rule) => rule.alert)).toEqual(['ProviderApprovalRateDrop', 'WebhookDeadLetterGrowth', 'WorkflowTasksWaiting', 'ActivityTasksWaiting', 'ApiServerErrors']);
    const byName = Object.fromEntries(rules.map((rule) => [rule.alert, rule]));
    expect(byName.ProviderApprovalRateDrop).toMatchObject({ for: '10m' });
    expect(byName.ProviderApprovalRateDrop.expr).toMatch(/< 0\.8[\s\S]*>= 20/);
    expect(byName.WebhookDeadLetterGrowth.expr).toMatch(/\[15m\]\) > 0/);
    expect(byName.ApiServerErrors).toMatchObject({ for: '5m' });
    expect(byName.ApiServerErrors.expr).toContain('> 0.01');
  });

  it('select only metrics the processes export', () => {
    for (const rule of rules) {
      const names = metricsIn(rule.expr);
      expect(names.length, rule.alert).toBeGreaterThan(0);
      for (const name of names) expect(METRICS, `${rule.alert}: ${name}`).toContain(name);
    }
  });
});

describe('the Grafana dashboard', () => {
  it('is a provisionable dashboard with the operators\' panels', () => {
    expect(dashboard).toMatchObject({ uid: 'switchboard', title: 'Switchboard' });
    expect(dashboard.schemaVersion).toBeGreaterThan(30);
    const titles = panels.map((panel) => panel.title);
    for (const title of ['Request rate by route', 'Request latency p50 / p95', '5xx rate', 'Approval rate per provider',
      'Provider call latency p95', 'Webhook backlog', 'Webhook delivery attempts by outcome', 'Worker task latency (schedule-to-start p95)']) {
      expect(titles).toContain(title);
    }
    expect(new Set(panels.map((panel: any) => panel.id)).size).toBe(panels.length);
  });

  it('queries only metrics the processes export', () => {
    for (const panel of panels) {
      expect(panel.targets.length, panel.title).toBeGreaterThan(0);
      for (const { expr } of panel.targets) {
        const names = metricsIn(expr);
        expect(names.length, panel.title).toBeGreaterThan(0);
        for (const name of names) expect(METRICS, `${panel.title}: ${name}`).toContain(name);
      }
    }
  });

  it('the metric check bites', () => {
    expect(metricsIn('sum by (provider, le) (rate(provider_call_duration_seconds_bucket{outcome=~"a|b"}[5m])) > 0.5'))
      .toEqual(['provider_call_duration_seconds_bucket']);
    expect(metricsIn('rate(payments_total[5m]) / on (x) up')).toEqual(['payments_total', 'up']);
    expect(metricsIn('histogram_quantile(0.95, sum by (le) (rate(x_bucket[5m]))) > 5 and y')).toEqual(['x_bucket', 'y']);
  });
});
