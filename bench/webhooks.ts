// The webhooks scenario (docs/performance.md#scenarios): events fanned out to one enabled endpoint and
// delivered, ours (the fan-out, its first attempts, delivery workflows for the rest) against the floor
// (one bare workflow and HTTP activity per delivery), both counted as requests reaching one receiver.

import { randomUUID } from 'node:crypto';
import { appendEvents } from '../db/events';
import { FLOOR_TASK_QUEUE } from './floor/worker';
import { floorDeliveryWorkflow } from './floor/workflows';
import { enabledEndpoint } from './http';
import { Repeated, round } from './measure';
import type { Merchant } from './merchant';
import { repeat } from './runs';
import { webhookSink, type Stack } from './stack';

const WEBHOOK_EVENTS = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 300);
const WEBHOOK_SLICES = 4;

/** A local endpoint that passes the handshake and calls back once `expected` deliveries reached it. */
async function receiver() {
  const state = { received: 0, expected: 0, allReceived: () => {} };
  const server = await webhookSink(() => {
    if (++state.received === state.expected) state.allReceived();
  });
  /** Resolves with the milliseconds until `count` requests reached the receiver after `start`. */
  const timed = async (count: number, start: () => Promise<unknown>) => {
    state.received = 0;
    state.expected = count;
    const done = new Promise<void>((r) => { state.allReceived = r; });
    const t0 = performance.now();
    await start();
    await Promise.race([done, new Promise((_, reject) => setTimeout(() => reject(new Error(`webhooks: ${state.received}/${count} after 120 s`)), 120_000))]);
    return performance.now() - t0;
  };
  return { ...server, timed };
}

export async function webhooksScenario(stack: Stack, merchant: Merchant): Promise<Repeated<Record<string, number>>> {
  const { http, key, account } = merchant;
  const { client } = stack;
  const target = await receiver();
  const endpoint = await enabledEndpoint(http, key, `${target.url}/hook`, ['*']);
  // Ours: the events written, as a feature writes them; the workers' dispatchers take them from there.
  const ours = (count: number) => target.timed(count, async () => {
    await appendEvents(stack.db, 'production', Array.from({ length: count }, (_, i) => ({
      event: 'payment_intent.succeeded', accountId: account.id, workspaceId: account.workspace_id, data: { object: { object: 'payment', n: i } },
    })));
  });
  // The floor: one workflow and one HTTP activity per delivery, started in batches of 20 as the fan-out does.
  const floor = (count: number) => target.timed(count, async () => {
    const batch = randomUUID();
    for (let i = 0; i < count; i += 20) {
      await Promise.all(Array.from({ length: Math.min(20, count - i) }, (_, j) => client.workflow.start(floorDeliveryWorkflow, {
        taskQueue: FLOOR_TASK_QUEUE, workflowId: `floor-delivery/${batch}/${i + j}`, args: [`${target.url}/floor`, i + j],
      })));
    }
  });
  const measured = await repeat('webhooks', async () => {
    // The sides in turns, WEBHOOK_SLICES slices each, the order reversed every other slice (as the
    // payment runs): each side's deliveries per second over its slices.
    const perSlice = Math.ceil(WEBHOOK_EVENTS / WEBHOOK_SLICES);
    const ms = { ours: 0, floor: 0 };
    for (let i = 0; i < WEBHOOK_SLICES; i++) {
      const turns = [async () => { ms.ours += await ours(perSlice); }, async () => { ms.floor += await floor(perSlice); }];
      for (const turn of i % 2 ? turns.reverse() : turns) await turn();
    }
    const deliveries = perSlice * WEBHOOK_SLICES;
    const perS = round(deliveries / (ms.ours / 1000));
    const floorPerS = round(deliveries / (ms.floor / 1000));
    return { per_s: perS, floor_per_s: floorPerS, deliveries, ratio: round(perS / floorPerS) };
  });
  // Later scenarios create payments whose events would otherwise be delivered here too.
  await http.delete(`/webhook-endpoints/${endpoint.id}`, key);
  target.server.close();
  return measured;
}
