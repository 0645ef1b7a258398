import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv2019 from 'ajv/dist/2019';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { SEARCH_ATTRIBUTES } from '../../workflows/shared';

const ROOT = join(__dirname, '..', '..');
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');
// Compose supports YAML merge keys (`<<: *switchboard`).
const compose = parse(read('docker-compose.yml'), { merge: true });
const services = compose.services as Record<string, any>;

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
    expect(services['temporal-ui'].ports).toContain('8080:8080');
    // Workers scale horizontally: no fixed name, no published port.
    expect(services.worker.container_name).toBeUndefined();
    expect(services.worker.ports).toBeUndefined();
  });

  it('pins the Temporal images and registers every search attribute as Keyword', () => {
    for (const name of ['temporal', 'temporal-setup', 'temporal-ui']) expect(services[name].image).toMatch(/^temporalio\/[a-z-]+:\d+\.\d+\.\d+/);
    const script = services['temporal-setup'].command.join('\n');
    for (const attribute of Object.values(SEARCH_ATTRIBUTES)) expect(script).toContain(attribute.name);
    expect(script).toContain('--type Keyword');
    const dynamic = read(services.temporal.volumes[0].split(':')[0].replace(/^\.\//, ''));
    expect(dynamic).toContain('frontend.enableExecuteMultiOperation');
  });

  it('runs our processes in production mode with secrets from .env, whose example has only placeholders', () => {
    const example = read('.env.example');
    for (const name of ['migrate', 'simulator', 'worker', 'api']) {
      expect(services[name].env_file).toBe('.env');
      expect(services[name].environment.NODE_ENV).toBe('production');
      expect(services[name].command[0]).toBe(name);
    }
    for (const secret of ['JWT_SECRET', 'VAULT_KEY', 'API_KEY_PEPPER', 'POSTGRES_PASSWORD']) {
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
