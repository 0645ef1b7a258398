import { request as httpRequest } from 'node:http';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createMerchant, Merchant, startStack, TestStack } from '../support/stack';
import { createConfig, createProvider } from '../support/routing';
import { REQUEST_ID_PATTERN } from '../../api/middleware/request-context';
import { MAX_BODY_DEPTH, MAX_PAGE, NO_NUL, WELL_FORMED } from '../../resources/schemas';

type Json = Record<string, any>;
const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/**
 * Regressions for what the fuzzer (fuzz.test.ts, Schemathesis with every check) found, pinned as plain
 * requests and as facts about the OpenAPI document.
 */
describe('fuzzer findings', () => {
  let stack: TestStack;
  let merchant: Merchant;
  let doc: Json;

  /** Follows a local `$ref` of the document. */
  const deref = (node: Json): Json => (typeof node?.$ref === 'string'
    ? deref(node.$ref.slice(2).split('/').reduce((at: Json, key: string) => at[key.replace(/~1/g, '/').replace(/~0/g, '~')], doc))
    : node);
  /** Every operation of the document: [path, method, operation]. */
  const operations = (): [string, string, Json][] => Object.entries(doc.paths as Json)
    .flatMap(([path, item]) => Object.entries(item as Json).filter(([m]) => METHODS.includes(m)).map(([m, op]) => [path, m, op as Json] as [string, string, Json]));
  /** The error reasons an operation declares for a status (from the anyOf of per-reason schemas). */
  const reasonsAt = (op: Json, status: string): string[] => {
    const response = op.responses[status] && deref(op.responses[status]);
    if (!response) return [];
    const schema = response.content['application/json'].schema;
    return (schema.anyOf ?? [schema]).map((ref: Json) => deref(ref).allOf[1].properties.error.properties.details.properties.reason.const);
  };
  /** A raw request: supertest and fetch cannot send TRACE. */
  const raw = (method: string, path: string) => new Promise<{ status: number; allow?: string; body: Json }>((resolve, reject) => {
    const req = httpRequest(`${stack.baseUrl}${path}`, { method }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => { text += c.toString(); });
      res.on('end', () => resolve({ status: res.statusCode!, allow: res.headers.allow, body: text ? JSON.parse(text) : {} }));
    });
    req.on('error', reject);
    req.end();
  });

  beforeAll(async () => {
    stack = await startStack({ RATE_LIMIT_RPS: '0' });
    merchant = await createMerchant(stack);
    doc = (await stack.http.get('/v1/openapi.json')).body;
  });
  afterAll(async () => stack?.close());

  describe('405 carries Allow (unsupported_method: 19 operations answered 405 without it)', () => {
    it('lists the path\'s methods in Allow on every 405, in the error envelope', async () => {
      const res = await stack.http.delete('/v1/accounts').set(bearer(merchant.token));
      expect(res.status).toBe(405);
      expect(res.body.error.details.reason).toBe('method_not_allowed');
      expect(res.headers.allow.split(', ').sort()).toEqual(['GET', 'HEAD', 'POST']);
      const put = await stack.http.put('/v1/account-memberships/mem_x').set(bearer(merchant.token));
      expect([put.status, put.headers.allow]).toEqual([405, 'DELETE']);
    });

    it('answers a method the router does not implement (TRACE) on every documented path with 405 and the documented methods', async () => {
      for (const [path, item] of Object.entries(doc.paths as Json)) {
        const documented = Object.keys(item).filter((m) => METHODS.includes(m)).map((m) => m.toUpperCase());
        const res = await raw('TRACE', path.replace(/\{[^}]+\}/g, 'x'));
        expect(res.status, path).toBe(405);
        expect(res.body.error.details.reason, path).toBe('method_not_allowed');
        const allowed = res.allow!.split(', ').filter((m) => m !== 'HEAD');
        expect(allowed.sort(), path).toEqual(documented.sort());
      }
    });

    it('keeps 404 for unknown paths, 405 for the open routes, and OPTIONS answering with Allow', async () => {
      const nowhere = await raw('TRACE', '/v1/nowhere');
      expect([nowhere.status, nowhere.allow, nowhere.body.error.details.reason]).toEqual([404, undefined, 'route_not_found']);
      const openapi = await stack.http.post('/v1/openapi.json');
      expect([openapi.status, openapi.headers.allow]).toEqual([405, 'HEAD, GET']);
      const options = await raw('OPTIONS', '/v1/payments/pay_x');
      expect(options.status).toBe(200);
      expect(options.allow!.split(', ').sort()).toEqual(['GET', 'HEAD']);
    });
  });

  describe('X-Request-Id is documented as it is handled (negative_data_rejection: 18 operations accepted one over maxLength)', () => {
    it('echoes an id that matches the documented pattern and replaces any other, never failing the request', async () => {
      const longest = 'a'.repeat(200);
      for (const [sent, echoed] of [[longest, true], ['r-1.2:3_X', true], [`${longest}b`, false], ['has space', false], ['é', false], ['a/b', false]] as const) {
        const res = await stack.http.get('/v1/accounts').set(bearer(merchant.token)).set('X-Request-Id', sent);
        expect(res.status, sent).toBe(200);
        expect(res.headers['x-request-id'], sent).toMatch(new RegExp(REQUEST_ID_PATTERN));
        if (echoed) expect(res.headers['x-request-id']).toBe(sent);
        else expect(res.headers['x-request-id']).toMatch(/^req_[0-9A-Z]{26}$/);
      }
    });

    it('declares the header as any string, and the id every response carries by its pattern', () => {
      expect(doc.components.headers['X-Request-Id']).toMatchObject({ required: true, schema: { type: 'string', pattern: REQUEST_ID_PATTERN } });
      for (const [path, method, op] of operations()) {
        const param = op.parameters.find((p: Json) => p.name === 'X-Request-Id');
        expect(param, `${method} ${path}`).toMatchObject({ in: 'header', required: false, schema: { type: 'string' } });
        expect(param.schema).not.toHaveProperty('maxLength');
        for (const [status, response] of Object.entries(op.responses as Json)) {
          expect(deref(response).headers['X-Request-Id'], `${method} ${path} ${status}`).toEqual({ $ref: '#/components/headers/X-Request-Id' });
        }
      }
    });
  });

  describe('no U+0000 in request strings (positive_data_acceptance: schema-valid strings with it were refused)', () => {
    it('refuses a NUL character in a body (Postgres cannot store it) with 400, not 500', async () => {
      const customer = await stack.http.post('/v1/customers').set(bearer(merchant.secretKey)).send({ name: 'Nul', email: 'nul@example.com' });
      expect(customer.status).toBe(201);
      const patched = await stack.http.patch(`/v1/customers/${customer.body.data.id}`).set(bearer(merchant.secretKey))
        .send({ country: 'AS', metadata: { 'a\u0000b': '' } });
      expect(patched.status, JSON.stringify(patched.body)).toBe(400);
      expect(patched.body.error.details).toMatchObject({ reason: 'validation_failed', fields: [{ path: 'body/metadata/a\\u0000b' }] });
      const created = await stack.http.post('/v1/customers').set(bearer(merchant.secretKey)).send({ name: 'x\u0000y', email: 'nul2@example.com' });
      expect(created.status, JSON.stringify(created.body)).toBe(400);
      expect(created.body.error.details.fields).toContainEqual({ path: 'body/name', message: 'must not contain the NUL character (\\u0000) or an unpaired surrogate (\\ud800–\\udfff)' });
    });

    it('refuses an unpaired surrogate the same way (jsonb refused it: 500, and a payment\'s workflow retried its row for good; text turned it into U+FFFD)', async () => {
      const send = (method: 'post' | 'patch', path: string, body: Json) => stack.http[method](path).set(bearer(merchant.secretKey)).send(body);
      const lone = '\ud800';
      const cases: [string, Json, string][] = [
        ['/v1/customers', { name: 'Lone', metadata: { k: `a${lone}` } }, 'body/metadata/k'],
        ['/v1/customers', { name: 'Lone', metadata: { [`k${'\udc00'}`]: 'v' } }, 'body/metadata/k\\udc00'],
        ['/v1/customers', { name: `x${lone}` }, 'body/name'],
        ['/v1/payments', { amount: 1000, currency: 'USD', metadata: { order: lone } }, 'body/metadata/order'],
        ['/v1/payments', { amount: 1000, currency: 'USD', customer: { name: `x${lone}` } }, 'body/customer/name'],
        [`/v1/account-memberships?account_id=${merchant.account.id}`, { user_id: lone, role: 'VIEWER' }, 'body/user_id'],
      ];
      for (const [path, body, field] of cases) {
        const res = await send('post', path, body);
        expect(res.status, `${path} ${JSON.stringify(res.body)}`).toBe(400);
        expect(res.body.error.details.reason).toBe('validation_failed');
        expect(res.body.error.details.fields, path).toContainEqual({ path: field, message: expect.stringMatching(/must not contain the NUL character \(\\u0000\) or an unpaired surrogate/) });
      }
      expect(await stack.db('live.payments').where({ account_id: merchant.account.id }).whereRaw("metadata->>'order' is not null").count('* as n').first()).toEqual({ n: 0 });
      // A well-formed pair is one character (U+1F600) like any other, and comes back as it went in.
      const emoji = await send('post', '/v1/customers', { name: 'Smile \u{1F600}', metadata: { '\u{1F600}': '\u{1F600}' } });
      expect(emoji.status, JSON.stringify(emoji.body)).toBe(201);
      expect(emoji.body.data).toMatchObject({ name: 'Smile \u{1F600}', metadata: { '\u{1F600}': '\u{1F600}' } });
    });

    it('refuses a NUL character in a query string and deep in a free-form value with 400', async () => {
      const query = await stack.http.get('/v1/routing-plans?payment_id=pay%00x').set(bearer(merchant.secretKey));
      expect(query.status, JSON.stringify(query.body)).toBe(400);
      expect(query.body.error.details.fields[0]).toMatchObject({ path: 'query/payment_id' });
      const events = await stack.http.get('/v1/events?type=payment%00x').set(bearer(merchant.secretKey));
      expect([events.status, events.body.error.details.reason]).toEqual([400, 'validation_failed']);
      const provider = await createProvider(stack);
      const config = await createConfig(stack, merchant, provider.id);
      const res = await stack.http.put(`/v1/payment-provider-configs/${config.id}`).set(bearer(merchant.secretKey))
        .send({ merchant_capabilities: { a: [{ b: 'x\u0000' }] } });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.error.details.fields[0].path).toBe('body/merchant_capabilities/a/0/b');
    });

    it('declares it: every request string has a pattern (or a format), every open object a propertyNames pattern', () => {
      const visit = (schema: Json, where: string, seen: Set<Json>): void => {
        const s = deref(schema);
        if (typeof s !== 'object' || s === null || seen.has(s)) return;
        seen.add(s);
        // A format (email, date-time) has no place for U+0000 either.
        if (s.type === 'string' && s.const === undefined && s.enum === undefined) expect(s.pattern ?? s.format, where).toBeDefined();
        if (s.type === 'object' && s.additionalProperties !== false) expect(s.propertyNames, where).toMatchObject({ pattern: NO_NUL, [WELL_FORMED]: true });
        for (const key of ['items', 'additionalProperties', 'not', 'if', 'then', 'else']) if (typeof s[key] === 'object') visit(s[key], `${where}/${key}`, seen);
        for (const key of ['properties', 'patternProperties']) for (const [k, v] of Object.entries(s[key] ?? {})) visit(v as Json, `${where}/${k}`, seen);
        for (const key of ['anyOf', 'oneOf', 'allOf']) for (const v of s[key] ?? []) visit(v, `${where}/${key}`, seen);
      };
      for (const [path, method, op] of operations()) {
        for (const p of op.parameters) if (p.in !== 'header') visit(p.schema, `${method} ${path} ${p.in}.${p.name}`, new Set());
        if (op.requestBody) visit(op.requestBody.content['application/json'].schema, `${method} ${path} body`, new Set());
      }
      expect(deref(doc.paths['/v1/customers'].post.requestBody.content['application/json'].schema).properties.name.anyOf[0]).toMatchObject({ pattern: NO_NUL, [WELL_FORMED]: true });
      expect(doc.components.schemas.JsonValue).toMatchObject({ pattern: NO_NUL, [WELL_FORMED]: true, propertyNames: { pattern: NO_NUL, [WELL_FORMED]: true } });
    });
  });

  describe('found while declaring the rules', () => {
    it('validates metadata values under a key with a line break (TypeBox\'s "^(.*)$" key pattern skipped such keys)', async () => {
      const res = await stack.http.post('/v1/customers').set(bearer(merchant.secretKey)).send({ name: 'Lines', metadata: { 'a\nb': 5 } });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.error.details.fields).toEqual([{ path: 'body/metadata/a\nb', message: 'must be string' }]);
      const ok = await stack.http.post('/v1/customers').set(bearer(merchant.secretKey)).send({ name: 'Lines', metadata: { 'a\nb': 'v' } });
      expect(ok.status, JSON.stringify(ok.body)).toBe(201);
    });

    it('validates API key permissions under a key with a line break (was a 500)', async () => {
      const res = await stack.http.post('/v1/api-keys').set(bearer(merchant.secretKey)).send({ name: 'k', permissions: { 'payment\n': 'read' } });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.error.details.fields).toContainEqual({ path: 'body/permissions/payment\n', message: 'must be array' });
    });

    it(`answers a body nested deeper than ${MAX_BODY_DEPTH} levels with 400, not a stack overflow (500)`, async () => {
      const deep = '{"a":'.repeat(20_000) + '1' + '}'.repeat(20_000);
      const res = await stack.http.post('/v1/customers').set(bearer(merchant.secretKey)).set('Idempotency-Key', 'deep-1')
        .set('Content-Type', 'application/json').send(`{"name":"Deep","metadata":${deep}}`);
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.error.details).toMatchObject({ reason: 'validation_failed', fields: [{ path: 'body' }] });
      // Deep inside a free-form value, without an Idempotency-Key: the same (validation walked it and overflowed).
      const config = await createConfig(stack, merchant, (await createProvider(stack)).id);
      const free = await stack.http.put(`/v1/payment-provider-configs/${config.id}`).set(bearer(merchant.secretKey))
        .set('Content-Type', 'application/json').send(`{"merchant_capabilities":${deep}}`);
      expect([free.status, free.body.error.details.reason]).toEqual([400, 'validation_failed']);
    });
  });

  describe('routing-rule conditions are declared as their grammar (positive_data_acceptance: schema-valid conditions were refused)', () => {
    let rulesUrl: string;
    beforeAll(async () => {
      const config = await createConfig(stack, merchant, (await createProvider(stack)).id);
      rulesUrl = `/v1/payment-provider-configs/${config.id}/rules`;
    });
    const post = (conditions: unknown) => stack.http.post(rulesUrl).set(bearer(merchant.secretKey)).send({ conditions });
    const nest = (levels: number) => {
      let c: Json = { amount: { gte: 1 } };
      for (let i = 1; i < levels; i += 1) c = { any: [c] };
      return c;
    };

    it('puts the grammar in the document: fields, operators per kind, metadata keys, 8 levels', () => {
      const body = doc.paths['/v1/payment-provider-configs/{id}/rules'].post.requestBody.content['application/json'].schema;
      expect(body.properties.conditions).toEqual({ $ref: '#/components/schemas/RuleConditions' });
      const top = doc.components.schemas.RuleConditions;
      expect(top.additionalProperties).toBe(false);
      expect(Object.keys(top.properties).sort()).toEqual(['amount', 'card.country', 'card.network', 'currency', 'customer.country', 'installments']);
      expect(Object.keys(top.patternProperties)).toEqual(['^(all|any)$', '^metadata\\.[^\\u0000]{1,40}$']);
      expect(Object.keys(doc.components.schemas.CurrencyOperators.properties).sort()).toEqual(['eq', 'in', 'neq', 'nin']);
      expect(doc.components.schemas.RuleConditionsLevel7.patternProperties['^(all|any)$'].items).toEqual({ $ref: '#/components/schemas/RuleConditionsLevel8' });
      expect(doc.components.schemas.RuleConditionsLevel8.patternProperties).not.toHaveProperty(['^(all|any)$']);
    });

    it('takes what the grammar allows and refuses the rest with 400 at the offending path', async () => {
      for (const ok of [{}, nest(8), { 'metadata.order': { in: ['a', 'b'] }, currency: { eq: 'EUR' } }, { [`metadata.${'😀'.repeat(40)}`]: { eq: 'x' } }]) {
        const res = await post(ok);
        expect(res.status, JSON.stringify(res.body)).toBe(201);
      }
      const bad: [unknown, string][] = [
        [nest(9), 'body/conditions/any/0/any/0/any/0/any/0/any/0/any/0/any/0/any'],
        [{ toString: { eq: 1 } }, 'body/conditions/toString'],
        [{ currency: { gt: 'USD' } }, 'body/conditions/currency/gt'],
        [{ [`metadata.${'😀'.repeat(41)}`]: { eq: 'x' } }, `body/conditions/metadata.${'😀'.repeat(41)}`],
      ];
      for (const [conditions, path] of bad) {
        const res = await post(conditions);
        expect(res.status, JSON.stringify(res.body)).toBe(400);
        expect(res.body.error.details.reason).toBe('validation_failed');
        expect(res.body.error.details.fields.map((f: Json) => f.path)).toContain(path);
      }
    });
  });

  describe('every status and reason an operation answers is declared (positive_data_acceptance / status_code_conformance)', () => {
    it('declares 422 last_owner on removing a membership, and answers it', async () => {
      expect(reasonsAt(doc.paths['/v1/account-memberships/{id}'].delete, '422')).toEqual(['last_owner']);
      const memberships = await stack.http.get(`/v1/account-memberships?account_id=${merchant.account.id}`).set(bearer(merchant.token));
      const owner = memberships.body.data.find((m: Json) => m.role === 'OWNER');
      const res = await stack.http.delete(`/v1/account-memberships/${owner.id}`).set(bearer(merchant.token));
      expect([res.status, res.body.error?.details.reason]).toEqual([422, 'last_owner']);
    });

    const KEYSET_LISTS = [
      '/v1/payments', '/v1/audit-events', '/v1/checkout-sessions', '/v1/payment-links',
      '/v1/products', '/v1/prices', '/v1/subscriptions', '/v1/invoices', '/v1/disputes',
    ];

    it('declares the Idempotency-Key answers on every POST, and no 409/415/422 where nothing can give one', () => {
      for (const [path, method, op] of operations()) {
        const statuses = Object.keys(op.responses);
        for (const status of ['401', '429', '500', '503']) expect(statuses, `${method} ${path}`).toContain(status);
        if (method === 'post') {
          expect(reasonsAt(op, '409'), `${method} ${path}`).toContain('idempotency_key_in_use');
          expect(reasonsAt(op, '422'), `${method} ${path}`).toContain('idempotency_key_reused');
        }
        if (['post', 'put', 'patch'].includes(method)) expect(reasonsAt(op, '415')).toEqual(['unsupported_media_type']);
        else expect(statuses, `${method} ${path}`).not.toContain('415');
        // A GET changes nothing, so no 409 or 422 — but the keyset lists' pagination, whose cursors can be
        // well-formed and still name no place in the list (422 invalid_pagination).
        if (method === 'get' && !KEYSET_LISTS.includes(path)) expect(statuses.filter((s) => s === '409' || s === '422'), `${method} ${path}`).toEqual([]);
      }
      expect(reasonsAt(doc.paths['/v1/payments'].get, '422')).toEqual(['invalid_pagination']);
      for (const list of KEYSET_LISTS) expect(reasonsAt(doc.paths[list].get, '422'), list).toEqual(['invalid_pagination']);
      expect(Object.keys(doc.paths['/v1/payments'].get.responses)).not.toContain('409');
      expect(reasonsAt(doc.paths['/v1/refunds'].post, '422').sort()).toEqual(['idempotency_key_reused', 'refund_exceeds_available']);
      expect(reasonsAt(doc.paths['/v1/payments/{id}'].get, '403')).toEqual(['account_access_denied', 'insufficient_permissions', 'publishable_key_not_allowed']);
      expect(deref(doc.paths['/v1/payments'].get.responses['503']).headers).toHaveProperty('Retry-After');
    });

    it('requires a request body exactly when {} would not do (an absent body counts as {})', async () => {
      expect(doc.paths['/v1/payment-provider-configs/{id}/fees'].post.requestBody.required).toBe(true);
      // No required field, but "exactly one of payment_id and charge_id": {} does not do either.
      expect(doc.paths['/v1/refunds'].post.requestBody.required).toBe(true);
      expect(doc.paths['/v1/payment-provider-configs/{id}'].put.requestBody.required).toBe(true);
      expect(doc.paths['/v1/customers'].post.requestBody.required).toBe(false);
      const res = await stack.http.post('/v1/customers').set(bearer(merchant.secretKey));
      expect(res.status).toBe(201);
    });

    it('declares the refund rules across fields, and answers them with the rule', async () => {
      const body = doc.paths['/v1/refunds'].post.requestBody.content['application/json'].schema;
      expect(body.allOf[0]).toMatchObject({ oneOf: [{ required: ['payment_id'] }, { required: ['charge_id'] }] });
      const both = await stack.http.post('/v1/refunds').set(bearer(merchant.secretKey)).send({ payment_id: 'pay_x', charge_id: 'ch_x' });
      expect(both.status).toBe(400);
      expect(both.body.error.details.fields).toEqual([{ path: 'body', message: 'give exactly one of payment_id and charge_id' }]);
      const other = await stack.http.post('/v1/refunds').set(bearer(merchant.secretKey)).send({ payment_id: 'pay_x', reason: 'DUPLICATE', reason_other: 'why' });
      expect(other.body.error.details.fields).toEqual([{ path: 'body/reason_other', message: 'is only allowed with reason OTHER' }]);
    });

    it('declares webhook event filters as the catalogue', async () => {
      const events = doc.paths['/v1/webhook-endpoints/{id}'].patch.requestBody.content['application/json'].schema.properties.events;
      expect(events.items.enum).toEqual(expect.arrayContaining(['*', 'charge.*', 'payment_intent.succeeded']));
      const res = await stack.http.patch('/v1/webhook-endpoints/we_x').set(bearer(merchant.secretKey)).send({ events: ['charge.*', 'nope'] });
      expect(res.status).toBe(400);
      expect(res.body.error.details.fields.map((f: Json) => f.path)).toEqual(['body/events/1']);
    });
  });

  describe('found in review', () => {
    const PAGED_LISTS = [
      '/v1/customers', '/v1/events', '/v1/refunds', '/v1/webhook-endpoints', '/v1/webhook-deliveries', '/v1/notifications', '/v1/payments', '/v1/routing-plans',
      '/v1/audit-events', '/v1/checkout-sessions', '/v1/payment-links',
      '/v1/products', '/v1/prices', '/v1/subscriptions', '/v1/invoices', '/v1/disputes',
    ];

    it(`refuses a page past ${MAX_PAGE} with 400 at query/page on every paged list (was 500 past bigint, or page 1 for 1e21), and declares it`, async () => {
      for (const list of PAGED_LISTS) {
        for (const page of ['1000000000000000000', '1e21', String(MAX_PAGE + 1)]) {
          const res = await stack.http.get(`${list}?page=${page}`).set(bearer(merchant.secretKey));
          expect(res.status, `${list}?page=${page} ${JSON.stringify(res.body)}`).toBe(400);
          expect(res.body.error.details).toMatchObject({ reason: 'validation_failed', fields: [{ path: 'query/page' }] });
        }
      }
      // The deepest page is still a page: empty here, not an error.
      const deepest = await stack.http.get(`/v1/customers?page=${MAX_PAGE}&limit=100`).set(bearer(merchant.secretKey));
      expect([deepest.status, deepest.body.page, deepest.body.data]).toEqual([200, MAX_PAGE, []]);
      const paged = operations().filter(([, , op]) => op.parameters.some((p: Json) => p.in === 'query' && p.name === 'page'));
      expect(paged.map(([path]) => path).sort()).toEqual([...PAGED_LISTS].sort());
      for (const [path, , op] of paged) {
        expect(op.parameters.find((p: Json) => p.name === 'page').schema, path).toMatchObject({ type: 'integer', minimum: 1, maximum: MAX_PAGE });
      }
    });

    it('refuses a leap second (23:59:60, which no Date holds) with 400 wherever a date-time is read (was 500)', async () => {
      const leap = (date: string) => `${date}T23:59:60Z`;
      const exists = { message: 'is not a time that exists' };
      const key = await stack.http.post('/v1/api-keys').set(bearer(merchant.secretKey)).send({ name: 'k', expires_at: leap('2031-06-30') });
      expect(key.status, JSON.stringify(key.body)).toBe(400);
      expect(key.body.error.details).toMatchObject({ reason: 'validation_failed', fields: [{ path: 'body/expires_at', ...exists }] });
      const endpoint = await stack.http.post('/v1/webhook-endpoints').set(bearer(merchant.secretKey)).send({ url: 'http://127.0.0.1:9/hook' });
      expect(endpoint.status, JSON.stringify(endpoint.body)).toBe(201);
      // Enabled as its handshake would leave it (no worker here): a pending endpoint refuses before any date is read.
      await stack.db('live.webhook_endpoints').where({ id: endpoint.body.data.id }).update({ status: 'enabled' });
      const recover = `/v1/webhook-endpoints/${endpoint.body.data.id}/recover`;
      for (const [body, path] of [[{ since: leap('2024-06-30') }, 'body/since'], [{ since: '2024-06-01T00:00:00Z', until: leap('2024-06-30') }, 'body/until']] as const) {
        const res = await stack.http.post(recover).set(bearer(merchant.secretKey)).send(body);
        expect(res.status, JSON.stringify(res.body)).toBe(400);
        expect(res.body.error.details).toMatchObject({ reason: 'validation_failed', fields: [{ path, ...exists }] });
      }
      const analytics = await stack.http.get(`/v1/analytics/providers?from=${leap('2016-12-31')}`).set(bearer(merchant.secretKey));
      expect(analytics.status, JSON.stringify(analytics.body)).toBe(400);
      expect(analytics.body.error.details.fields).toEqual([{ path: 'query/from', ...exists }]);
    });

    it('refuses a date-time that its offset carries past the year 9999 (analytics echoed "+010000-01-01…")', async () => {
      const res = await stack.http.get('/v1/analytics/providers').query({ from: '9999-12-30T00:00:00Z', to: '9999-12-31T23:59:59-23:59' }).set(bearer(merchant.secretKey));
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.error.details.fields).toEqual([{ path: 'query/to', message: 'must be before the year 10000 (UTC)' }]);
    });

    it('answers headers over 16 KiB with 431 in the envelope (Node answered a bare status line)', async () => {
      const res = await new Promise<{ status: number; type?: string; body: Json }>((resolve, reject) => {
        const req = httpRequest(`${stack.baseUrl}/v1/accounts`, { headers: { Authorization: `Bearer ${'x'.repeat(20_000)}` } }, (answer) => {
          let text = '';
          answer.on('data', (c: Buffer) => { text += c.toString(); });
          answer.on('end', () => resolve({ status: answer.statusCode!, type: answer.headers['content-type'], body: JSON.parse(text) }));
        });
        req.on('error', reject);
        req.end();
      });
      expect(res.status).toBe(431);
      expect(res.type).toMatch(/^application\/json/);
      expect(res.body).toEqual({
        message: 'The request headers are larger than 16 KiB.', success: false,
        error: { code: 431, message: 'The request headers are larger than 16 KiB.', details: { reason: 'headers_too_large' } },
      });
    });

    it('answers a body that is not in its Content-Encoding, or is cut short, with 400 (zlib\'s errors were 500)', async () => {
      const json = '{"name":"Encoded"}';
      // Sent as they are: supertest writes a Buffer with a JSON content type as JSON.
      const send = (encoding: string, body: Buffer | string) => new Promise<{ status: number; body: Json }>((resolve, reject) => {
        const req = httpRequest(`${stack.baseUrl}/v1/customers`, {
          method: 'POST', headers: { ...bearer(merchant.secretKey), 'Content-Type': 'application/json', 'Content-Encoding': encoding },
        }, (res) => {
          let text = '';
          res.on('data', (c: Buffer) => { text += c.toString(); });
          res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
        });
        req.on('error', reject);
        req.end(body);
      });
      const gzipped = gzipSync(json);
      const cases: [string, Buffer | string][] = [
        ['gzip', json], ['deflate', json], ['br', json], ['gzip', gzipped.subarray(0, gzipped.length - 8)], ['br', brotliCompressSync(json).subarray(0, 4)],
      ];
      for (const [encoding, body] of cases) {
        const res = await send(encoding, body);
        expect(res.status, `${encoding} ${JSON.stringify(res.body)}`).toBe(400);
        expect(res.body.error.details).toMatchObject({
          reason: 'validation_failed', fields: [{ path: 'body', message: `could not be decoded as its Content-Encoding (${encoding}) says` }],
        });
      }
      for (const [encoding, body] of [['gzip', gzipped], ['deflate', deflateSync(json)], ['br', brotliCompressSync(json)]] as const) {
        const res = await send(encoding, body);
        expect(res.status, `${encoding} ${JSON.stringify(res.body)}`).toBe(201);
        expect(res.body.data.name).toBe('Encoded');
      }
      const other = await send('compress', json);
      expect([other.status, other.body.error.details.reason]).toEqual([415, 'unsupported_media_type']);
    });

    it('answers a malformed percent-encoding on the 3-D Secure return route with its 404 page (decodeURIComponent threw: 500)', async () => {
      const cases: ['get' | 'post', string][] = [
        ['get', '/v1/payments/%/authentication-return?charge=ch_1'],
        ['get', '/v1/payments/%E0%A4%A/authentication-return'],
        ['post', '/v1/payments/%C0/authentication-return'],
      ];
      for (const [method, path] of cases) {
        const res = await stack.http[method](path);
        expect(res.status, path).toBe(404);
        expect(res.headers['content-type'], path).toBe('text/html; charset=utf-8');
        expect(res.text, path).toContain('This link does not belong to a payment.');
      }
    });
  });
});
