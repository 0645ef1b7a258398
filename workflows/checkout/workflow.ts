import { allHandlersFinished, ApplicationFailure, condition, proxyActivities, setCurrentDetails, setHandler } from '@temporalio/workflow';
import { withArticle } from '../../lib/errors';
import {
  checkoutQueries, checkoutSignals, checkoutUpdates, type CheckoutActivities, type CheckoutOutcome, type CheckoutRef, type CheckoutSessionInput,
  type CheckoutState,
} from '../../contracts/checkout';

/** Short Postgres work: quick retries, for as long as the database is away (a session's end must land). */
const records = proxyActivities<CheckoutActivities>({
  startToCloseTimeout: '15s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '10s' },
});

/** Work that goes through the payment's workflow (its start, its cancel): asked again until Temporal answers. */
const commands = proxyActivities<CheckoutActivities>({
  startToCloseTimeout: '1m',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', nonRetryableErrorTypes: ['not_found'] },
});

/**
 * Past its expiry, a session whose payment is being paid looks at the payment again after these waits
 * (then every 5 minutes) in case the payment's own word does not come: a 3-D Secure challenge ends by
 * AUTHENTICATION_TIMEOUT at the latest, a walk in minutes.
 */
const IN_FLIGHT_CHECKS_MS = [15_000, 30_000, 60_000, 120_000, 300_000];

/**
 * One workflow per checkout session (`checkout/<cs_id>`), started with its `create` update. It writes
 * the session's row, starts the session's payment, then waits, durably, for the first of: the payment's
 * workflow saying the payment is paid (`paymentSettled`), `expire` from the API, or the expiry time.
 *
 * Paid → COMPLETE/PAID with `checkout.session.completed`. Expiry → the payment canceled (`abandoned`),
 * then EXPIRED with `checkout.session.expired`. As Stripe does, a session never expires under a payment
 * being paid right now (PROCESSING, or REQUIRES_ACTION: the customer at their bank): canceling it would
 * void a charge the customer is completing. The session then stays OPEN and waits for that payment's
 * outcome: succeeded completes it, failed lets it expire. Each move is guarded in the store (`WHERE
 * status = 'OPEN'`), so a session completes once and a late expiry after completion does nothing.
 */
export async function checkoutSessionWorkflow(input: CheckoutSessionInput): Promise<CheckoutState> {
  const ref: CheckoutRef = {
    sessionId: input.sessionId, accountId: input.accountId, workspaceId: input.workspaceId, environment: input.environment,
    paymentId: input.paymentId, context: input.context,
  };
  const state: CheckoutState = { sessionId: input.sessionId, paymentId: input.paymentId, status: 'CREATING', expiresAt: input.expiresAt };
  let nudged = false;
  const expireRequests: { answer?: CheckoutOutcome }[] = [];
  /** When the session next expires or, past its expiry under a payment in flight, looks at the payment again. */
  let nextLookAt = input.expiresAt;
  let inFlightLooks = 0;

  setHandler(checkoutQueries.state, () => state);
  setHandler(checkoutSignals.paymentSettled, () => {
    nudged = true;
  });
  setHandler(checkoutUpdates.create, async () => {
    await condition(() => state.status !== 'CREATING');
    return { status: state.status };
  });
  setHandler(checkoutUpdates.expire, async () => {
    const request: { answer?: CheckoutOutcome } = {};
    expireRequests.push(request);
    await condition(() => request.answer !== undefined);
    return request.answer!;
  }, {
    validator: () => {
      if (state.status !== 'OPEN') {
        throw ApplicationFailure.create({ type: 'invalid_state', message: `${withArticle(state.status)} checkout session cannot expire.`, details: [{ status: state.status }], nonRetryable: true });
      }
    },
  });

  await records.recordCheckoutSession(input);
  await commands.startCheckoutPayment(input.payment);
  state.status = 'OPEN';
  describe();

  while (state.status === 'OPEN') {
    const wait = nextLookAt - Date.now();
    if (wait > 0 && !(await condition(() => nudged || expireRequests.length > 0, wait)) && Date.now() < nextLookAt) continue;
    if (nudged) {
      nudged = false;
      apply(await records.settleCheckoutSession(ref));
    } else if (expireRequests.length) {
      const request = expireRequests.shift()!;
      request.answer = await expire();
    } else {
      await expire();
    }
  }
  // Asked while the session was ending: it has ended, which is the answer.
  for (const request of expireRequests) request.answer = { outcome: 'closed', status: state.status };
  await condition(allHandlersFinished);
  return state;

  async function expire(): Promise<CheckoutOutcome> {
    const outcome = await commands.expireCheckoutSession(ref);
    if (outcome.outcome === 'in_flight' && Date.now() >= input.expiresAt) {
      nextLookAt = Date.now() + IN_FLIGHT_CHECKS_MS[Math.min(inFlightLooks, IN_FLIGHT_CHECKS_MS.length - 1)];
      inFlightLooks += 1;
    }
    apply(outcome);
    return outcome;
  }

  function apply(outcome: CheckoutOutcome): void {
    state.status = outcome.status;
    state.waitingOnPayment = outcome.outcome === 'in_flight' ? outcome.paymentStatus : undefined;
    describe();
  }

  function describe(): void {
    setCurrentDetails([
      `**${state.status}** · ${input.amount} ${input.currency} minor units · payment ${input.paymentId} · account ${input.accountId}`,
      state.status === 'OPEN' ? `expires at ${new Date(input.expiresAt).toISOString()}` : '',
      state.waitingOnPayment ? `past its expiry, waiting for its payment (${state.waitingOnPayment}) to end before expiring` : '',
    ].filter(Boolean).join('\n'));
  }
}
