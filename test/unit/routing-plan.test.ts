import { describe, expect, it } from 'vitest';
import { PaymentFacts } from '../../lib/routing/conditions';
import { buildRoutingPlan, RoutingConfig, RoutingFee, RoutingHints, RoutingProvider } from '../../lib/routing/plan';

const providers: RoutingProvider[] = [
  {
    id: 'pp_alpha',
    methods: [
      { id: 'ppm_alpha_visa', category: 'CARD', network: 'VISA', installments_supported: true },
      { id: 'ppm_alpha_mc', category: 'CARD', network: 'MASTERCARD', installments_supported: true },
    ],
  },
  {
    id: 'pp_beta',
    methods: [
      { id: 'ppm_beta_visa', category: 'CARD', network: 'VISA', installments_supported: false },
      { id: 'ppm_beta_amex', category: 'CARD', network: 'AMEX', installments_supported: false },
    ],
  },
  { id: 'pp_gamma', methods: [{ id: 'ppm_gamma_mc', category: 'CARD', network: 'MASTERCARD', installments_supported: true }] },
];

const METHOD_OF: Record<string, string> = { pp_alpha: 'ppm_alpha_visa', pp_beta: 'ppm_beta_visa', pp_gamma: 'ppm_gamma_mc' };

function fee(provider: string, volume_fee: number, fixed_fee: number, extra: Partial<RoutingFee> = {}): RoutingFee {
  return { payment_provider_method_id: METHOD_OF[provider], installment_count: 1, volume_fee, fixed_fee, fixed_fee_currency: 'USD', ...extra };
}

let clock = 0;
function config(id: string, provider: string, extra: Partial<RoutingConfig> = {}): RoutingConfig {
  clock += 1;
  return {
    id,
    payment_provider_id: provider,
    deleted: false,
    created_at: new Date(Date.UTC(2026, 0, 1, 0, 0, clock)).toISOString(),
    rules: [],
    fees: [fee(provider, 2.9, 30)],
    ...extra,
  };
}

const visa: PaymentFacts = { amount: 10_000, currency: 'USD', installments: 1, card: { network: 'VISA', country: 'US' } };

interface Case {
  name: string;
  configs: RoutingConfig[];
  payment?: Partial<PaymentFacts>;
  routing?: RoutingHints;
  candidates: [id: string, reason: string, estimated_fee?: number | null][];
  ineligible?: Record<string, string>;
}

const cases: Case[] = [
  {
    name: 'a config with no rules matches everything',
    configs: [config('ppc_1', 'pp_alpha')],
    candidates: [['ppc_1', 'least_cost', 320]],
  },
  {
    name: 'a config whose only rule misses is ineligible',
    configs: [config('ppc_1', 'pp_alpha', { rules: [{ conditions: { currency: { eq: 'EUR' } } }] }), config('ppc_2', 'pp_beta')],
    candidates: [['ppc_2', 'least_cost']],
    ineligible: { ppc_1: 'rules_not_matched' },
  },
  {
    name: 'any one rule matching is enough',
    configs: [config('ppc_1', 'pp_alpha', { rules: [{ conditions: { currency: { eq: 'EUR' } } }, { conditions: { amount: { gte: 5_000 } } }] })],
    candidates: [['ppc_1', 'least_cost']],
  },
  {
    name: 'rules with nested any and all are evaluated',
    configs: [
      config('ppc_1', 'pp_alpha', { rules: [{ conditions: { all: [{ currency: { eq: 'USD' } }, { any: [{ 'card.country': { eq: 'GB' } }, { amount: { gt: 9_999 } }] }] } }] }),
      config('ppc_2', 'pp_beta', { rules: [{ conditions: { any: [{ all: [{ currency: { eq: 'USD' } }, { amount: { lt: 100 } }] }, { 'card.country': { eq: 'GB' } }] } }] }),
    ],
    candidates: [['ppc_1', 'least_cost']],
    ineligible: { ppc_2: 'rules_not_matched' },
  },
  {
    name: 'a provider without a method for the card network is ineligible',
    configs: [config('ppc_1', 'pp_gamma'), config('ppc_2', 'pp_alpha')],
    candidates: [['ppc_2', 'least_cost']],
    ineligible: { ppc_1: 'no_matching_method' },
  },
  {
    name: 'installments need a method that supports them',
    configs: [config('ppc_1', 'pp_beta'), config('ppc_2', 'pp_alpha', { fees: [fee('pp_alpha', 3.5, 0, { installment_count: 3 })] })],
    payment: { installments: 3 },
    candidates: [['ppc_2', 'least_cost', 350]],
    ineligible: { ppc_1: 'installments_unsupported' },
  },
  {
    name: 'without a fee for the installment count the single-payment fee applies',
    configs: [config('ppc_1', 'pp_alpha', { fees: [fee('pp_alpha', 2, 0), fee('pp_alpha', 4, 0, { installment_count: 6 })] })],
    payment: { installments: 3 },
    candidates: [['ppc_1', 'least_cost', 200]],
  },
  {
    name: 'hints come first in their order, the rest by cost',
    configs: [
      config('ppc_1', 'pp_alpha', { fees: [fee('pp_alpha', 1, 0)] }),
      config('ppc_2', 'pp_beta', { fees: [fee('pp_beta', 5, 0)] }),
      config('ppc_3', 'pp_alpha', { fees: [fee('pp_alpha', 3, 0)] }),
    ],
    routing: { provider_config_ids: ['ppc_3', 'ppc_2'] },
    candidates: [['ppc_3', 'hint', 300], ['ppc_2', 'hint', 500], ['ppc_1', 'least_cost', 100]],
  },
  {
    name: 'a hint for an ineligible config is ignored',
    configs: [config('ppc_1', 'pp_alpha'), config('ppc_2', 'pp_gamma')],
    routing: { provider_config_ids: ['ppc_2', 'ppc_missing'] },
    candidates: [['ppc_1', 'least_cost']],
    ineligible: { ppc_2: 'no_matching_method' },
  },
  {
    name: 'excluded configs are removed, even when hinted',
    configs: [config('ppc_1', 'pp_alpha'), config('ppc_2', 'pp_beta')],
    routing: { provider_config_ids: ['ppc_1'], exclude_provider_config_ids: ['ppc_1'] },
    candidates: [['ppc_2', 'least_cost']],
    ineligible: { ppc_1: 'excluded' },
  },
  {
    name: 'the least estimated cost ranks first',
    configs: [
      config('ppc_1', 'pp_alpha', { fees: [fee('pp_alpha', 2.9, 30)] }),
      config('ppc_2', 'pp_beta', { fees: [fee('pp_beta', 2.5, 0)] }),
      config('ppc_3', 'pp_alpha', { fees: [fee('pp_alpha', 1.9, 50)] }),
    ],
    candidates: [['ppc_3', 'least_cost', 240], ['ppc_2', 'least_cost', 250], ['ppc_1', 'least_cost', 320]],
  },
  {
    name: 'equal fees: the oldest config wins',
    configs: [config('ppc_old', 'pp_alpha'), config('ppc_mid', 'pp_beta'), config('ppc_new', 'pp_alpha')],
    candidates: [['ppc_old', 'least_cost', 320], ['ppc_mid', 'least_cost', 320], ['ppc_new', 'least_cost', 320]],
  },
  {
    name: 'equal fees and creation time: the smaller id wins',
    configs: [
      { ...config('ppc_b', 'pp_alpha'), created_at: '2026-01-01T00:00:00.000Z' },
      { ...config('ppc_a', 'pp_alpha'), created_at: '2026-01-01T00:00:00.000Z' },
    ],
    candidates: [['ppc_a', 'least_cost'], ['ppc_b', 'least_cost']],
  },
  {
    name: 'a fee in another currency ranks after comparable ones, estimated on its volume part',
    configs: [
      config('ppc_eur', 'pp_alpha', { fees: [fee('pp_alpha', 1, 25, { fixed_fee_currency: 'EUR' })] }),
      config('ppc_usd', 'pp_beta', { fees: [fee('pp_beta', 4, 30)] }),
    ],
    candidates: [['ppc_usd', 'least_cost', 430], ['ppc_eur', 'least_cost_cross_currency', 100]],
  },
  {
    name: 'a config without a fee row ranks after every config with a fee',
    configs: [
      config('ppc_nofee', 'pp_alpha', { fees: [] }),
      config('ppc_eur', 'pp_beta', { fees: [fee('pp_beta', 1, 25, { fixed_fee_currency: 'EUR' })] }),
      config('ppc_usd', 'pp_alpha', { fees: [fee('pp_alpha', 9, 99)] }),
    ],
    candidates: [['ppc_usd', 'least_cost', 999], ['ppc_eur', 'least_cost_cross_currency', 100], ['ppc_nofee', 'no_fee_configured', null]],
  },
  {
    name: 'a fee for another method does not count',
    configs: [config('ppc_1', 'pp_alpha', { fees: [{ ...fee('pp_alpha', 1, 0), payment_provider_method_id: 'ppm_alpha_mc' }] })],
    candidates: [['ppc_1', 'no_fee_configured', null]],
  },
  {
    name: 'the plan is cut at max_attempts (default 3)',
    configs: ['ppc_1', 'ppc_2', 'ppc_3', 'ppc_4'].map((id) => config(id, 'pp_alpha')),
    candidates: [['ppc_1', 'least_cost'], ['ppc_2', 'least_cost'], ['ppc_3', 'least_cost']],
    ineligible: { ppc_4: 'beyond_max_attempts' },
  },
  {
    name: 'max_attempts can shorten the plan',
    configs: [config('ppc_1', 'pp_alpha'), config('ppc_2', 'pp_beta')],
    routing: { max_attempts: 1 },
    candidates: [['ppc_1', 'least_cost']],
    ineligible: { ppc_2: 'beyond_max_attempts' },
  },
  {
    name: 'deleted configs are never candidates, even when hinted',
    configs: [config('ppc_1', 'pp_alpha', { deleted: true }), config('ppc_2', 'pp_beta')],
    routing: { provider_config_ids: ['ppc_1'] },
    candidates: [['ppc_2', 'least_cost']],
    ineligible: { ppc_1: 'deleted' },
  },
  {
    name: 'a config whose provider is not in the environment is ineligible',
    configs: [config('ppc_1', 'pp_elsewhere'), config('ppc_2', 'pp_alpha')],
    candidates: [['ppc_2', 'least_cost']],
    ineligible: { ppc_1: 'provider_not_found' },
  },
  {
    name: 'no eligible config gives an empty plan',
    configs: [config('ppc_1', 'pp_gamma')],
    candidates: [],
    ineligible: { ppc_1: 'no_matching_method' },
  },
];

describe('buildRoutingPlan', () => {
  it.each(cases)('$name', ({ configs, payment, routing, candidates, ineligible = {} }) => {
    const plan = buildRoutingPlan({ payment: { ...visa, ...payment }, configs, providers, routing });

    expect(plan.candidates.map((c) => [c.payment_provider_config_id, c.reason])).toEqual(candidates.map(([id, reason]) => [id, reason]));
    candidates.forEach(([, , estimatedFee], index) => {
      if (estimatedFee !== undefined) expect(plan.candidates[index].estimated_fee).toBe(estimatedFee);
    });
    expect(Object.fromEntries(plan.ineligible.map((i) => [i.payment_provider_config_id, i.reason]))).toEqual(ineligible);
  });

  it('names the provider and the matching method of each candidate', () => {
    const plan = buildRoutingPlan({ payment: { ...visa, card: { network: 'MASTERCARD' } }, configs: [config('ppc_1', 'pp_gamma')], providers });
    expect(plan.candidates).toEqual([
      { payment_provider_config_id: 'ppc_1', payment_provider_id: 'pp_gamma', payment_provider_method_id: 'ppm_gamma_mc', estimated_fee: 320, reason: 'least_cost' },
    ]);
  });

  it('picks the cheapest of several methods for the same network', () => {
    const twoVisa: RoutingProvider = {
      id: 'pp_two',
      methods: [
        { id: 'ppm_credit', category: 'CARD', network: 'VISA', installments_supported: true },
        { id: 'ppm_debit', category: 'CARD', network: 'VISA', installments_supported: true },
      ],
    };
    const fees: RoutingFee[] = [
      { payment_provider_method_id: 'ppm_credit', installment_count: 1, volume_fee: 2.9, fixed_fee: 30, fixed_fee_currency: 'USD' },
      { payment_provider_method_id: 'ppm_debit', installment_count: 1, volume_fee: 0.8, fixed_fee: 10, fixed_fee_currency: 'USD' },
    ];
    const plan = buildRoutingPlan({ payment: visa, configs: [config('ppc_1', 'pp_two', { fees })], providers: [twoVisa] });
    expect(plan.candidates[0]).toMatchObject({ payment_provider_method_id: 'ppm_debit', estimated_fee: 90 });
  });

  it('rounds the estimated fee to whole minor units', () => {
    const configs = [config('ppc_1', 'pp_alpha', { fees: [fee('pp_alpha', 2.9, 30)] })];
    const plan = buildRoutingPlan({ payment: { ...visa, amount: 1_500 }, configs, providers });
    expect(plan.candidates[0].estimated_fee).toBe(74); // 43.5 + 30, rounded half up
  });

  it.each([0, 6, 2.5])('refuses max_attempts %s', (maxAttempts) => {
    expect(() => buildRoutingPlan({ payment: visa, configs: [], providers, routing: { max_attempts: maxAttempts } })).toThrow(RangeError);
  });
});
