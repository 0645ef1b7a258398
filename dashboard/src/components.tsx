import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { ApiError } from './api';
import { humanize, relative, when } from './format';
import { navigate } from './router';

type Tone = 'green' | 'blue' | 'amber' | 'red' | 'grey' | 'purple';

const TONES: Record<string, Tone> = {
  // payments
  SUCCEEDED: 'green', AUTHORIZED: 'blue', PROCESSING: 'amber', REQUIRES_ACTION: 'amber', CREATED: 'grey',
  FAILED: 'red', CANCELED: 'grey', REFUNDED: 'purple', PARTIALLY_REFUNDED: 'purple',
  // charges
  CAPTURED: 'green', DECLINED: 'red', UNKNOWN: 'amber', VOIDED: 'grey',
  // webhooks
  succeeded: 'green', pending: 'blue', failed: 'amber', dead_lettered: 'red',
  enabled: 'green', pending_verification: 'amber', disabled: 'red',
  // checkout sessions and payment links
  OPEN: 'blue', COMPLETE: 'green', EXPIRED: 'grey', PAID: 'green', UNPAID: 'amber', active: 'green', inactive: 'grey',
  // subscriptions and invoices (UNPAID, CANCELED, OPEN and PAID as above)
  ACTIVE: 'green', TRIALING: 'blue', INCOMPLETE: 'amber', INCOMPLETE_EXPIRED: 'grey', PAST_DUE: 'red',
  DRAFT: 'grey', UNCOLLECTIBLE: 'red', VOID: 'grey',
  // disputes: red while an answer is owed, amber while the processor decides
  NEEDS_RESPONSE: 'red', WARNING_NEEDS_RESPONSE: 'red', UNDER_REVIEW: 'amber', WARNING_UNDER_REVIEW: 'amber',
  WARNING_CLOSED: 'grey', WON: 'green', LOST: 'red',
};

// Statuses whose words read badly humanized ("Warning needs response").
const LABELS: Record<string, string> = {
  WARNING_NEEDS_RESPONSE: 'Inquiry: needs response', WARNING_UNDER_REVIEW: 'Inquiry: under review', WARNING_CLOSED: 'Inquiry closed',
};

export function statusLabel(value: string): string {
  return LABELS[value] ?? humanize(value);
}

export function Status({ value }: { value: string }) {
  return <span class={`badge badge-${TONES[value] ?? 'grey'}`} data-status={value}>{statusLabel(value)}</span>;
}

/** An HTTP status code coloured by class (0: no answer came back). */
export function HttpCode({ code }: { code: number | null }) {
  if (code === null || code === undefined) return <span class="muted">—</span>;
  const tone = code === 0 ? 'red' : code < 300 ? 'green' : code < 500 ? 'red' : 'amber';
  return <span class={`code code-${tone}`}>{code === 0 ? 'no answer' : code}</span>;
}

export function Time({ value }: { value: string | null | undefined }) {
  return value ? <time dateTime={value} title={when(value)}>{relative(value)}</time> : <span class="muted">—</span>;
}

export function Id({ value }: { value: string | null | undefined }) {
  if (!value) return <span class="muted">—</span>;
  return <span class="id"><code>{value}</code><CopyButton value={value} /></span>;
}

/** A URL to hand on (a hosted page, a payment link), with a copy button. */
export function CopyUrl({ value, testId }: { value: string; testId?: string }) {
  return <span class="id"><span class="url" data-testid={testId}>{value}</span><CopyButton value={value} /></span>;
}

function CopyButton({ value }: { value: string }) {
  const [copied, setCopied] = useState(false);
  const copy = (e: Event) => {
    e.preventDefault();
    e.stopPropagation();
    void navigator.clipboard?.writeText(value).then(() => { setCopied(true); setTimeout(() => setCopied(false), 1200); });
  };
  return <button type="button" class="copy" title="Copy" aria-label={`Copy ${value}`} onClick={copy}>{copied ? <CheckIcon /> : <CopyIcon />}</button>;
}

// Drawn, not a font glyph: system fonts differ in which symbols they have.
const CopyIcon = () => (
  <svg width="12" height="12" viewBox="0 0 16 16" fill="none" stroke="currentColor" stroke-width="1.5" aria-hidden="true">
    <rect x="5" y="5" width="9" height="9" rx="1.5" /><path d="M11 5V3.5A1.5 1.5 0 0 0 9.5 2h-6A1.5 1.5 0 0 0 2 3.5v6A1.5 1.5 0 0 0 3.5 11H5" />
  </svg>
);
const CheckIcon = () => (
  <svg width="12" height="12" viewBox="0 0 16 16" fill="none" stroke="currentColor" stroke-width="2" aria-hidden="true"><path d="M3 8.5l3 3 7-7" /></svg>
);

/** An in-app link (history navigation, still a real href for new tabs). */
export function Link({ to, children, class: cls }: { to: string; children: ComponentChildren; class?: string }) {
  return (
    <a href={`/dashboard${to}`} class={cls} onClick={(e) => {
      if (e.metaKey || e.ctrlKey || e.shiftKey || e.button !== 0) return;
      e.preventDefault();
      navigate(to);
    }}>{children}</a>
  );
}

export function Empty({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <div class="empty" role="status">
      <div class="empty-title">{title}</div>
      {children ? <div class="empty-body">{children}</div> : null}
    </div>
  );
}

export function ErrorState({ error, retry }: { error: unknown; retry?: () => void }) {
  const message = error instanceof Error ? error.message : String(error);
  const reason = error instanceof ApiError ? error.reason : undefined;
  return (
    <div class="error-state" role="alert">
      <div class="error-title">{error instanceof ApiError && error.status === 404 ? 'Not found' : 'Something went wrong'}</div>
      <div>{message}{reason && reason !== 'not_found' ? <span class="muted"> ({reason})</span> : null}</div>
      {retry ? <button type="button" class="btn btn-secondary" onClick={retry}>Try again</button> : null}
    </div>
  );
}

/** One labelled value in a detail page's row of facts. */
export function Fact({ label, children }: { label: string; children: ComponentChildren }) {
  return <div class="fact" data-fact={label}><div class="fact-label">{label}</div><div class="fact-value">{children}</div></div>;
}

export interface Outcome { ok: boolean; text: string }

/** A change the operator asked for: busy while it runs, then how it went (the API's message on failure). */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<Outcome | null>(null);
  const run = async (work: () => Promise<string>) => {
    setBusy(true);
    setOutcome(null);
    try {
      setOutcome({ ok: true, text: await work() });
    } catch (err) {
      setOutcome({ ok: false, text: err instanceof Error ? err.message : String(err) });
    } finally {
      setBusy(false);
    }
  };
  return { busy, outcome, run };
}

export type Action = ReturnType<typeof useAction>;

export function OutcomeNotice({ outcome }: { outcome: Outcome | null }) {
  return outcome ? <div class={`notice ${outcome.ok ? 'notice-ok' : 'notice-error'}`} role="status">{outcome.text}</div> : null;
}

export function Loading({ label = 'Loading…' }: { label?: string }) {
  return <div class="loading" aria-busy="true">{label}</div>;
}

export function Section({ title, actions, children, count }: { title: string; actions?: ComponentChildren; children: ComponentChildren; count?: number }) {
  return (
    <section class="card">
      <header class="card-header">
        <h2>{title}{count !== undefined ? <span class="count">{count}</span> : null}</h2>
        {actions ? <div class="card-actions">{actions}</div> : null}
      </header>
      <div class="card-body">{children}</div>
    </section>
  );
}

/** Previous/next over a list; past the API's counting limit the total shows as "10,000+". */
export function Pager({ page, hasMore, total, limit, shown, onPage }: { page: number; hasMore: boolean; total: number | null; limit: number; shown: number; onPage: (page: number) => void }) {
  if (total === 0 || (page === 1 && shown === 0)) return null;
  const from = (page - 1) * limit + 1;
  const to = from + shown - 1;
  return (
    <nav class="pager" aria-label="Pagination">
      <span class="muted">{from}–{to} of {total ?? '10,000+'}</span>
      <button type="button" class="btn btn-secondary" disabled={page <= 1} onClick={() => onPage(page - 1)}>← Previous</button>
      <button type="button" class="btn btn-secondary" disabled={!hasMore} onClick={() => onPage(page + 1)}>Next →</button>
    </nav>
  );
}

export interface Resource<T> { data?: T; error?: unknown; loading: boolean; reload: () => void }

/** Loads something for a view; reloads when `deps` change or on demand. A 401 ends the session. */
export function useResource<T>(load: () => Promise<T>, deps: unknown[], onUnauthorized?: () => void): Resource<T> {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ data: s.data, loading: true }));
    load().then(
      (data) => { if (live) setState({ data, loading: false }); },
      (error) => {
        if (!live) return;
        if (error instanceof ApiError && error.status === 401 && onUnauthorized) onUnauthorized();
        setState({ error, loading: false });
      },
    );
    return () => { live = false; };
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { ...state, reload };
}
