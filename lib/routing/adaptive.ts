// Adaptive routing's decision (docs/routing.md): the order a payment tries its candidates in, and why
// each one is where it is. Pure and deterministic: the caller loads the health windows; every draw
// comes from a hash of the payment id, so the same payment is ranked the same way every time.

import {
  CircuitState,
  HealthWindow,
  RankedCandidate,
  RankingReason,
  RankInput,
  RoutingSettings,
} from './adaptive-contract';

/** Approval estimates this close (inclusive) count as equal: the cheaper candidate goes first. */
export const APPROVAL_TOLERANCE = 0.02;
/** z of the Wilson score interval whose upper bound decides whether a candidate could be as good as the best (95 %). */
const CONFIDENCE_Z = 1.96;

/** What each draw is for: separate salts keep the draws of one payment independent of each other. */
const SALT = { exploration: 'exploration', explorationPick: 'exploration-pick', split: 'split' } as const;
const probeSalt = (configId: string): string => `probe:${configId}`;

type Candidate = RankInput['candidates'][number];

/** A candidate on its way through the ranking; `at` is its index in the input. */
interface Entry {
  at: number;
  candidate: Candidate;
  score: number | null;
  window: HealthWindow | null;
  explored: boolean;
  /** The strategy's part of the note. */
  why: string;
}

interface Circuit {
  state: CircuitState;
  /** Half-open and drawn for a probe: stays where the strategy put it. */
  probed: boolean;
  why: string;
}

export function rankCandidates(input: RankInput): RankedCandidate[] {
  const now = Date.parse(input.now);
  if (Number.isNaN(now)) throw new RangeError('now must be an ISO time');
  const { settings } = input;
  const circuits = input.candidates.map((candidate) => circuitOf(candidate.provider_config_id, input, now));
  // Open, or half-open and not probed by this payment: tried only after every other candidate.
  const blocked = circuits.map((circuit) => circuit.state === 'open' || (circuit.state === 'half_open' && !circuit.probed));

  const ordered = byStrategy(input, blocked);
  const behindOpen = [...ordered.filter((entry) => !blocked[entry.at]), ...ordered.filter((entry) => blocked[entry.at])];

  return behindOpen.map((entry): RankedCandidate => {
    const circuit = circuits[entry.at];
    const reason: RankingReason = {
      strategy: settings.strategy,
      score: entry.score,
      window: entry.window && withoutId(entry.window),
      circuit: circuit.state,
      explored: entry.explored || circuit.probed,
      note: [entry.why, circuit.why].filter(Boolean).join(' · '),
    };
    return { provider_config_id: entry.candidate.provider_config_id, reason };
  });
}

/**
 * The circuit of one config as routing sees it at `now` (also what analytics shows): open when at least
 * `min_attempts` attempts in the elimination window failed at `error_rate_threshold` or more (transport
 * errors and unknown outcomes; declines are answers, never failures) and the last failure is younger
 * than `cool_down_seconds`; half-open once it is older; closed otherwise, without data, or when
 * elimination is off.
 */
export function circuitState(window: HealthWindow | undefined, elimination: RoutingSettings['elimination'], now: number): CircuitState {
  if (!elimination.enabled || !window || !tripped(window, elimination)) return 'closed';
  const lastError = window.last_error_at === null ? NaN : Date.parse(window.last_error_at);
  // No usable time for the last failure: nothing says it is recent, so probe rather than shut out.
  if (Number.isNaN(lastError)) return 'half_open';
  return now - lastError < elimination.cool_down_seconds * 1000 ? 'open' : 'half_open';
}

/**
 * The estimated authorization probability over the success window, the prior acting as pseudo-counts:
 * (approvals + prior_approvals) / ((attempts − hard declines) + prior_attempts). Hard declines are the
 * card's, not the provider's. Null when there is neither data nor a prior.
 */
/**
 * The upper end of the Wilson score interval of the same counts: how good the candidate could still be.
 * Little data (a provider just back from an outage, probed by a few payments) leaves it wide, so a
 * cheaper provider that may well be as good as the best is given the traffic again; a provider that
 * keeps declining narrows it below the best.
 */
export function approvalUpperBound(window: HealthWindow | null | undefined, success: RoutingSettings['success_rate']): number | null {
  const n = nonHardAttempts(window) + success.prior_attempts;
  if (n <= 0) return null;
  const p = ((window?.approvals ?? 0) + success.prior_approvals) / n;
  const z2 = CONFIDENCE_Z * CONFIDENCE_Z;
  return (p + z2 / (2 * n) + CONFIDENCE_Z * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n))) / (1 + z2 / n);
}

export function approvalEstimate(window: HealthWindow | null | undefined, success: RoutingSettings['success_rate']): number | null {
  const approvals = window?.approvals ?? 0;
  const denominator = nonHardAttempts(window) + success.prior_attempts;
  if (denominator <= 0) return null;
  return (approvals + success.prior_approvals) / denominator;
}

/**
 * A uniform draw in [0, 1) fixed by the payment id and what it is for. FNV-1a over the text, then
 * MurmurHash3's finalizer so that ids differing only in their last characters land far apart.
 */
export function paymentDraw(paymentId: string, salt: string): number {
  const text = `${salt}:${paymentId}`;
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i += 1) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return (hash >>> 0) / 2 ** 32;
}

function tripped(window: HealthWindow, elimination: RoutingSettings['elimination']): boolean {
  const errors = window.transport_errors + window.unknown;
  // errors > 0: a threshold of 0 must not open the circuit of a config that never failed.
  return window.attempts >= elimination.min_attempts && errors > 0 && errors / window.attempts >= elimination.error_rate_threshold;
}

function circuitOf(configId: string, input: RankInput, now: number): Circuit {
  const { elimination } = input.settings;
  if (!elimination.enabled) return { state: 'closed', probed: false, why: 'circuit check off' };
  const window = input.health.elimination[configId];
  const state = circuitState(window, elimination, now);
  if (state === 'closed' || !window) return { state: 'closed', probed: false, why: 'circuit closed' };

  const errors = window.transport_errors + window.unknown;
  const lastError = window.last_error_at === null ? NaN : Date.parse(window.last_error_at);
  const ago = Number.isNaN(lastError) ? 'time of the last error unknown' : `last error ${Math.max(0, Math.round((now - lastError) / 1000))} s ago`;
  const facts = `${errors} of ${window.attempts} attempts failed in ${elimination.window_minutes} min, ${ago}`;
  if (state === 'open') return { state, probed: false, why: `circuit open: ${facts}` };

  const probed = paymentDraw(input.payment_id, probeSalt(configId)) < elimination.probe_share;
  const share = percent(elimination.probe_share);
  const verdict = probed ? `probed (${share} of payments)` : `not probed, tried last (probed by ${share} of payments)`;
  return { state, probed, why: `circuit half-open: ${facts}; ${verdict}` };
}

function byStrategy(input: RankInput, blocked: boolean[]): Entry[] {
  switch (input.settings.strategy) {
    case 'success_rate': return bySuccessRate(input, blocked);
    case 'volume_split': return byVolumeSplit(input);
    case 'least_cost': return byCost(input, '');
  }
}

function byCost(input: RankInput, prefix: string): Entry[] {
  const { elimination } = input.settings;
  return input.candidates.map((candidate, at) => ({
    at,
    candidate,
    score: null,
    // What the decision read: the circuit's window (the order itself is the static plan's).
    window: elimination.enabled ? (input.health.elimination[candidate.provider_config_id] ?? null) : null,
    explored: false,
    why: `${prefix}${costNote(candidate)}`,
  }));
}

function bySuccessRate(input: RankInput, blocked: boolean[]): Entry[] {
  const success = input.settings.success_rate;
  const entries = input.candidates.map((candidate, at): Entry => {
    const window = input.health.success[candidate.provider_config_id] ?? null;
    const score = approvalEstimate(window, success);
    return { at, candidate, score, window, explored: false, why: approvalNote(score, window, success) };
  });
  const ordered = withinTolerance(entries, success);

  if (paymentDraw(input.payment_id, SALT.exploration) >= success.exploration_share) return ordered;
  // Exploring a candidate whose circuit is open would only send it to the back again: never those.
  const pool = ordered.slice(1).filter((entry) => !blocked[entry.at]);
  if (pool.length === 0) return ordered;
  const chosen = pool[Math.floor(paymentDraw(input.payment_id, SALT.explorationPick) * pool.length)];
  const explored: Entry = { ...chosen, explored: true, why: `explored (${percent(success.exploration_share)} of payments) · ${chosen.why}` };
  return [explored, ...ordered.filter((entry) => entry !== chosen)];
}

/**
 * Highest estimate first, but among the candidates that could be as good as the best remaining one —
 * their estimate, or the upper end of its confidence interval, within APPROVAL_TOLERANCE of the best
 * estimate — the earliest in the static (cost) order goes first. Greedy, so the tolerance never chains:
 * each pick is measured against the best estimate still unplaced. Candidates without an estimate go last.
 */
function withinTolerance(entries: Entry[], success: RoutingSettings['success_rate']): Entry[] {
  const remaining = entries.filter((entry) => entry.score !== null);
  const ordered: Entry[] = [];
  while (remaining.length > 0) {
    const best = Math.max(...remaining.map((entry) => entry.score as number));
    // The epsilon absorbs binary-float noise: 0.92 − 0.02 is not exactly 0.90.
    const couldBe = (entry: Entry) => Math.max(entry.score as number, approvalUpperBound(entry.window, success) ?? 0);
    const next = remaining.findIndex((entry) => couldBe(entry) >= best - APPROVAL_TOLERANCE - 1e-9);
    ordered.push(...remaining.splice(next, 1));
  }
  return [...ordered, ...entries.filter((entry) => entry.score === null)];
}

function byVolumeSplit(input: RankInput): Entry[] {
  const shares = splitShares(input);
  if (shares.size === 0) return byCost(input, 'no split allocation among the candidates, ');

  // Walk the cumulative shares in the order the settings list them; the draw falls in one bucket.
  const draw = paymentDraw(input.payment_id, SALT.split);
  const listed = [...shares];
  let [chosenId, chosenShare] = listed[listed.length - 1];
  let cumulative = 0;
  for (const [id, share] of listed) {
    cumulative += share;
    if (draw < cumulative) {
      [chosenId, chosenShare] = [id, share];
      break;
    }
  }

  const entries = byCost(input, '').map((entry): Entry => {
    const share = shares.get(entry.candidate.provider_config_id) ?? null;
    if (share === null) return { ...entry, why: `not in the split · ${entry.why}` };
    return { ...entry, score: share, why: `split ${percent(share)}, not this payment's bucket · ${entry.why}` };
  });
  const chosenAt = entries.findIndex((entry) => entry.candidate.provider_config_id === chosenId);
  const chosen = { ...entries[chosenAt], why: `split bucket ${percent(chosenShare)}` };
  return [chosen, ...entries.filter((_, at) => at !== chosenAt)];
}

/** Each listed config present among the candidates → its share (0..1), renormalized over those present. */
function splitShares(input: RankInput): Map<string, number> {
  const present = new Set(input.candidates.map((candidate) => candidate.provider_config_id));
  const percents = new Map<string, number>();
  for (const { provider_config_id: id, percent: value } of input.settings.volume_split.allocations) {
    if (present.has(id) && value > 0) percents.set(id, (percents.get(id) ?? 0) + value);
  }
  const total = [...percents.values()].reduce((sum, value) => sum + value, 0);
  return new Map([...percents].map(([id, value]) => [id, value / total]));
}

function nonHardAttempts(window: HealthWindow | null | undefined): number {
  return window ? Math.max(0, window.attempts - window.hard_declines) : 0;
}

function approvalNote(score: number | null, window: HealthWindow | null, success: RoutingSettings['success_rate']): string {
  const prior = `prior ${success.prior_approvals}/${success.prior_attempts}`;
  const data = window && nonHardAttempts(window) > 0 ? `${window.approvals}/${nonHardAttempts(window)} non-hard + ${prior}` : `no data, ${prior}`;
  return score === null ? `approval unknown (${data})` : `approval ${score.toFixed(2)} (${data})`;
}

function costNote(candidate: Candidate): string {
  return candidate.estimated_fee === null ? 'least cost, fee unknown' : `least cost, fee ${candidate.estimated_fee}`;
}

function percent(share: number): string {
  return `${Number((share * 100).toFixed(1))}%`;
}

function withoutId(window: HealthWindow): Omit<HealthWindow, 'provider_config_id'> {
  const { provider_config_id: _id, ...rest } = window;
  return rest;
}
