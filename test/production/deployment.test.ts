import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv2019 from 'ajv/dist/2019';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { SEARCH_ATTRIBUTES } from '../../contracts/temporal';
import { DYNAMIC_CONFIG_FILE, dynamicConfigFlags } from '../../scripts/local-temporal';

const ROOT = join(__dirname, '..', '..');
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');
// Compose supports YAML merge keys (`<<: *switchboard`).
const compose = parse(read('docker-compose.yml'), { merge: true });
const services = compose.services as Record<string, any>;

/** `${VAR:-default}` and `${VAR}` as Compose interpolates them, with `env` as the environment (.env included). */
function interpolate(value: string, env: Record<string, string> = {}): string {
  return value.replace(/\$\{(\w+)(?:(:?)[-?]([^}]*))?\}/g, (_all, name: string, colon: string, fallback = '') =>
    (colon ? env[name] || fallback : env[name] ?? fallback));
}

/**
 * The host address each published port of a service listens on, `*` for every interface: the short
 * syntax `[host_ip:][host_port:]container_port[/proto]` (a bare or `host:container` entry is every
 * interface) and the long one (`host_ip` unset is every interface).
 */
function publishedOn(service: any, env: Record<string, string> = {}): { address: string; entry: string }[] {
  return (service.ports ?? []).map((port: unknown) => {
    if (typeof port === 'number') return { address: '*', entry: String(port) };
    if (typeof port === 'object' && port) {
      const ip = interpolate(String((port as { host_ip?: string }).host_ip ?? ''), env);
      return { address: ['', '0.0.0.0', '::', '[::]'].includes(ip) ? '*' : ip, entry: JSON.stringify(port) };
    }
    const entry = interpolate(String(port), env).replace(/\/(tcp|udp)$/, '');
    const ip = /^\[([^\]]+)\]:/.exec(entry)?.[1] ?? (entry.split(':').length === 3 ? entry.split(':')[0] : '');
    return { address: ['', '0.0.0.0', '::'].includes(ip) ? '*' : ip, entry };
  });
}

/** Compiled file → the source `npm run build` (tsc -p tsconfig.build.json) makes it from. */
function sourceOf(distFile: string): string {
  return distFile.replace(/^dist\//, '').replace(/\.js$/, '.ts');
}

/** No Docker engine here: the deployment files are checked as documents. */
describe('docker-compose.yml', () => {
  it('is valid against the Compose Specification schema', () => {
    const ajv = new Ajv2019({ strict: false, allErrors: true, validateFormats: false });
    // The schema names draft 2019-09 with a trailing '#', which ajv does not know by that id.
    // It also uses draft-04 `id` keywords (strings) that ajv refuses: they only name subschemas.
    const { $schema: _draft, ...schema } = JSON.parse(read('test/fixtures/compose-spec.json'));
    const withoutIds = (node: unknown): unknown => (Array.isArray(node) ? node.map(withoutIds)
      : node && typeof node === 'object' ? Object.fromEntries(Object.entries(node).filter(([k, v]) => !(k === 'id' && typeof v === 'string')).map(([k, v]) => [k, withoutIds(v)]))
        : node);
    const validate = ajv.compile(withoutIds(schema) as object);
    expect(validate(compose), JSON.stringify(validate.errors, null, 2)).toBe(true);
    // …and the validation bites: an unknown service key is refused.
    expect(validate({ ...compose, services: { ...services, api: { ...services.api, bogus_key: true } } })).toBe(false);
  });

  it('gives every service an image or a build, and depends only on services that exist, in a sane order', () => {
    for (const [name, service] of Object.entries(services)) {
      expect(service.image ?? service.build, name).toBeDefined();
      for (const [dep, { condition }] of Object.entries<any>(service.depends_on ?? {})) {
        expect(services[dep], `${name} depends on ${dep}`).toBeDefined();
        if (['migrate', 'temporal-setup'].includes(dep)) expect(condition).toBe('service_completed_successfully');
      }
    }
    expect(services.api.depends_on).toMatchObject({ migrate: {}, 'temporal-setup': {} });
    expect(services.worker.depends_on).toMatchObject({ migrate: {}, 'temporal-setup': {} });
    expect(services.temporal.depends_on.postgres.condition).toBe('service_healthy');
    expect(services.migrate.depends_on.postgres.condition).toBe('service_healthy');
  });

  it('has healthchecks for postgres, temporal, api, worker and simulator, and publishes the API and UI ports', () => {
    for (const name of ['postgres', 'temporal', 'api', 'worker', 'simulator']) expect(services[name].healthcheck?.test, name).toBeDefined();
    expect(services.api.ports).toContain('3000:3000');
    expect(publishedOn(services['temporal-ui'])).toEqual([{ address: '127.0.0.1', entry: '127.0.0.1:8080:8080' }]);
    // Workers scale horizontally: no fixed name, no published port.
    expect(services.worker.container_name).toBeUndefined();
    expect(services.worker.ports).toBeUndefined();
  });

  it('publishes only the API on every interface: Temporal and its UI (no authentication) on 127.0.0.1 unless opted in', () => {
    const everywhere = (env: Record<string, string> = {}) => Object.entries(services)
      .flatMap(([name, service]) => publishedOn(service, env).filter((p) => p.address === '*').map((p) => `${name} ${p.entry}`));
    expect(everywhere()).toEqual(['api 3000:3000']);
    expect(publishedOn(services.temporal)).toEqual([{ address: '127.0.0.1', entry: '127.0.0.1:7233:7233' }]);
    // The opt-in is one variable each (for a Temporal with mTLS on a firewalled network).
    expect(publishedOn(services.temporal, { TEMPORAL_BIND_ADDRESS: '10.0.0.5' })).toEqual([{ address: '10.0.0.5', entry: '10.0.0.5:7233:7233' }]);
    expect(everywhere({ TEMPORAL_BIND_ADDRESS: '0.0.0.0', TEMPORAL_UI_BIND_ADDRESS: '0.0.0.0' }))
      .toEqual(['temporal 0.0.0.0:7233:7233', 'temporal-ui 0.0.0.0:8080:8080', 'api 3000:3000']);
    // …and the check bites on every form of "every interface".
    for (const ports of [['7233:7233'], [7233], ['0.0.0.0:7233:7233/tcp'], ['[::]:7233:7233'], [{ target: 7233, published: 7233 }]]) {
      expect(publishedOn({ ports }).map((p) => p.address)).toEqual(['*']);
    }
    expect(publishedOn({ ports: [{ target: 7233, published: 7233, host_ip: '127.0.0.1' }] }).map((p) => p.address)).toEqual(['127.0.0.1']);
    expect(read('docs/production.md')).toMatch(/TEMPORAL_BIND_ADDRESS[\s\S]*mTLS/);
  });

  it('pins the Temporal images and registers every search attribute as Keyword', () => {
    for (const name of ['temporal', 'temporal-setup', 'temporal-ui']) expect(services[name].image).toMatch(/^temporalio\/[a-z-]+:\d+\.\d+\.\d+/);
    const script = services['temporal-setup'].command.join('\n');
    for (const attribute of Object.values(SEARCH_ATTRIBUTES)) expect(script).toContain(attribute.name);
    expect(script).toContain('--type Keyword');
  });

  it('gives its Temporal the dynamic config file the local dev server takes its flags from', () => {
    const [mounted, target] = services.temporal.volumes[0].split(':');
    expect(join(ROOT, mounted)).toBe(DYNAMIC_CONFIG_FILE);
    expect(services.temporal.environment.DYNAMIC_CONFIG_FILE_PATH).toBe(target.replace(/^\/etc\/temporal\//, ''));
  });

  it('runs our processes in production mode with secrets from .env, whose example has only placeholders', () => {
    const example = read('.env.example');
    for (const name of ['migrate', 'simulator', 'worker', 'api']) {
      expect(services[name].env_file).toBe('.env');
      expect(services[name].environment.NODE_ENV).toBe('production');
      expect(services[name].command[0]).toBe(name);
    }
    for (const secret of ['JWT_SECRET', 'SYSTEM_JWT_SECRET', 'VAULT_KEY', 'API_KEY_PEPPER', 'POSTGRES_PASSWORD']) {
      expect(example).toMatch(new RegExp(`^${secret}=CHANGE_ME`, 'm'));
    }
    expect(existsSync(join(ROOT, '.env'))).toBe(false);
  });

  it('uses only environment variables the README documents', () => {
    const readme = read('README.md');
    const ours = ['migrate', 'simulator', 'worker', 'api'].flatMap((name) => Object.keys(services[name].environment));
    const fromExample = [...read('.env.example').matchAll(/^([A-Z_]+)=/gm)].map((m) => m[1]).filter((v) => v !== 'POSTGRES_PASSWORD');
    for (const variable of new Set([...ours, ...fromExample])) expect(readme, variable).toContain(`\`${variable}\``);
  });
});

describe('the Temporal dynamic config', () => {
  const config = parse(readFileSync(DYNAMIC_CONFIG_FILE, 'utf8')) as Record<string, { value: unknown }[]>;

  it('reaches the dev server as one flag a key, its value as JSON', () => {
    const flags = dynamicConfigFlags();
    expect(flags.filter((flag) => flag === '--dynamic-config-value')).toHaveLength(Object.keys(config).length);
    expect(flags).toContain('frontend.enableExecuteMultiOperation=true');
    // A history shard's transfer queue reads, raised from 20 a second: the dev server's one shard capped its starts.
    expect(flags).toContain('history.transferProcessorMaxPollRPS=10240');
    expect(dynamicConfigFlags('limit.blobSize.error:\n  - value: "2mb"\n')).toEqual(['--dynamic-config-value', 'limit.blobSize.error="2mb"']);
  });

  it('refuses a key the dev server could not take as the cluster does: constraints, or several values', () => {
    expect(() => dynamicConfigFlags('a.b:\n  - value: 1\n    constraints: { namespace: default }\n')).toThrow(/a\.b: .*one value without constraints/);
    expect(() => dynamicConfigFlags('a.b:\n  - value: 1\n  - value: 2\n')).toThrow(/a\.b/);
    expect(() => dynamicConfigFlags('a.b: []\n')).toThrow(/a\.b/);
    expect(dynamicConfigFlags('a.b:\n  - value: 1\n    constraints: {}\n')).toEqual(['--dynamic-config-value', 'a.b=1']);
  });
});

describe('Dockerfile', () => {
  const dockerfile = read('Dockerfile');
  const entrypoint = read('docker/entrypoint.sh');

  it('is multi-stage, production dependencies only in the last stage, non-root', () => {
    const stages = dockerfile.split(/^FROM /m).slice(1);
    expect(stages.length).toBeGreaterThanOrEqual(2);
    const last = stages[stages.length - 1];
    expect(dockerfile).toMatch(/npm ci --omit=dev/);
    expect(last).toMatch(/^USER node$/m);
    expect(last).toMatch(/ENV NODE_ENV=production/);
    expect(last).toMatch(/COPY --from=build .*\/app\/dist \.\/dist/);
    expect(last).not.toMatch(/npm ci(?! --omit=dev)/);
    expect(dockerfile).toMatch(/RUN npm run build/);
  });

  it('starts only files that npm run build produces, including the pre-built workflow bundle', () => {
    const started = [...entrypoint.matchAll(/node (dist\/[\w/-]+\.js)/g)].map((m) => m[1]);
    expect(started).toEqual(expect.arrayContaining(['dist/api/main.js', 'dist/worker/main.js', 'dist/simulator/main.js', 'dist/scripts/migrate.js']));
    const build = JSON.parse(read('tsconfig.build.json')) as { include: string[] };
    for (const file of started) {
      expect(existsSync(join(ROOT, sourceOf(file))), file).toBe(true);
      expect(build.include, file).toContain(sourceOf(file).split('/')[0]);
    }
    const pkg = JSON.parse(read('package.json'));
    expect(pkg.scripts.build).toContain('node dist/scripts/bundle-workflows.js');
    expect(read('worker/worker.ts')).toContain("join(ROOT_DIR, 'dist', 'workflow-bundle.js')");
    expect(dockerfile).toMatch(/ENTRYPOINT \["switchboard"\]/);
    expect(dockerfile).toContain('docker/entrypoint.sh /usr/local/bin/switchboard');
  });
});
