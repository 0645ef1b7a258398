import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { bearer, startStack, type TestStack } from '../support/stack';
import { startSimulator, type TestSimulator } from '../support/payments';
import { spawnWorker, type WorkerProcess } from '../support/worker-process';
import { flatten } from '../support/history';
import { spawnApi, type ChildProcessHandle } from '../production/support';
import { paymentWorkflowId } from '../../contracts/payments';
import { checkoutWorkflowId } from '../../contracts/checkout';
import { CARDS, checkoutMerchant, createSession, fillCard, HAS_CHROMIUM, launchChromium, type Shop, startShop } from './hosted-page-support';

/**
 * A session paid on the hosted page in Chromium (a decline, a mistyped card, then a good one), through
 * real API and worker processes logging at debug; then every card number typed is looked for in what
 * the browser received, both processes' logs, the API's metrics, and the Temporal histories of the
 * session's payment and of the session.
 */
describe.skipIf(!HAS_CHROMIUM)('the hosted page keeps card numbers out of pages, logs, metrics and histories', () => {
  let sim: TestSimulator;
  let stack: TestStack;
  let api: ChildProcessHandle;
  let worker: WorkerProcess;
  let workerLog = '';
  let browser: Browser;
  let shop: Shop;

  beforeAll(async () => {
    sim = await startSimulator();
    stack = await startStack({ SIMULATOR_URL: sim.url });
    api = await spawnApi(stack, { LOG_LEVEL: 'debug', SIMULATOR_URL: sim.url });
    worker = await spawnWorker(stack, { LOG_LEVEL: 'debug' });
    worker.proc.stdout!.on('data', (c: Buffer) => { workerLog += c.toString(); });
    worker.proc.stderr!.on('data', (c: Buffer) => { workerLog += c.toString(); });
    shop = await startShop();
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await shop?.close();
    api?.proc.kill('SIGTERM');
    await api?.exited;
    await worker?.stop();
    await stack?.close();
    await sim?.close();
  });

  it('finds none of them anywhere', async () => {
    const viaChild = { ...stack, http: supertest(api.url) } as TestStack;
    const m = await checkoutMerchant(viaChild);
    const session = await createSession(viaChild, m, shop);

    const page = await browser.newPage();
    const received: string[] = [];
    page.on('response', async (r) => { received.push(await r.text().catch(() => '')); });
    await page.goto(session.url);
    const pay = page.getByRole('button', { name: /^Pay / });
    await fillCard(page, CARDS.declined, { cvc: '987' });
    await pay.click();
    await page.locator('#message').waitFor();
    const mistyped = '4242424242424241';
    await fillCard(page, mistyped, { cvc: '987' });
    await pay.click();
    await page.locator('#number-error').waitFor();
    await fillCard(page, CARDS.visa, { cvc: '987' });
    await pay.click();
    await page.waitForURL(`${shop.url}/success?session_id=${session.id}`);
    await page.close();
    const paid = await viaChild.http.get(`/v1/payments/${session.payment_id}`).set(bearer(m.secretKey));
    expect(paid.body.data.status).toBe('SUCCEEDED');

    const client = await stack.deps.temporal();
    const history = async (workflowId: string) => flatten(await client.workflow.getHandle(workflowId).fetchHistory()).join('\n');
    const metrics = await (await fetch(`${api.url}/metrics`)).text();
    const places: Record<string, string> = {
      'pages received': received.join('\n'),
      'API log': api.output(),
      'worker log': workerLog,
      'API metrics': metrics,
      'payment history': await history(paymentWorkflowId(session.payment_id)),
      'session history': await history(checkoutWorkflowId(session.id)),
    };
    // The scans see what they should: the page's requests were logged, the histories name the payment.
    expect(places['API log']).toContain(`"path":"/checkout/${session.id}"`);
    expect(places['payment history']).toContain(session.payment_id);
    expect(metrics).toContain('route="/checkout/:id"');
    expect(metrics).not.toContain(session.id);

    const numbers = [CARDS.declined, mistyped, CARDS.visa].flatMap((n) => [n, n.replace(/(\d{4})(?=\d)/g, '$1 ')]);
    const leaks: string[] = [];
    for (const [where, text] of Object.entries(places)) {
      for (const number of numbers) if (text.includes(number)) leaks.push(`${number} in the ${where}`);
      if (/"?cvc"?\s*[:=]\s*"?987\b/i.test(text) || text.includes('cvc=987')) leaks.push(`the CVC in the ${where}`);
    }
    expect(leaks).toEqual([]);
  }, 120_000);
});
