/** Money in minor units, shown the way a person reads it. */
export function money(amount: number, currency: string): string {
  try {
    return new Intl.NumberFormat('en-US', { style: 'currency', currency }).format(amount / 100);
  } catch {
    return `${(amount / 100).toFixed(2)} ${currency}`;
  }
}

const dateTime = new Intl.DateTimeFormat('en-US', { dateStyle: 'medium', timeStyle: 'medium' });

export function when(value: string | null | undefined): string {
  return value ? dateTime.format(new Date(value)) : '—';
}

/** "3 min ago", "in 5 s": for scanning lists; the exact time goes in the title. */
export function relative(value: string | null | undefined, now = Date.now()): string {
  if (!value) return '—';
  const diff = new Date(value).getTime() - now;
  const abs = Math.abs(diff);
  const unit = abs < 60_000 ? [Math.round(abs / 1000), 's'] : abs < 3_600_000 ? [Math.round(abs / 60_000), 'min']
    : abs < 86_400_000 ? [Math.round(abs / 3_600_000), 'h'] : [Math.round(abs / 86_400_000), 'd'];
  const text = `${unit[0]} ${unit[1]}`;
  return diff < 0 ? `${text} ago` : `in ${text}`;
}

export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '—';
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
}

/** `payment_intent.succeeded` → `Payment intent succeeded`; `dead_lettered` → `Dead lettered`. */
export function humanize(value: string): string {
  const text = value.replace(/[._]/g, ' ').toLowerCase();
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** Local datetime-local value (yyyy-MM-ddTHH:mm) for a Date. */
export function toLocalInput(date: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

const integer = new Intl.NumberFormat('en-US');

/** 2520 → `2,520`. */
export function count(value: number): string {
  return integer.format(value);
}

/** A share (0..1) as a percentage with one decimal: 0.95 → `95.0%`; null (no data) → `—`. */
export function percent(share: number | null | undefined): string {
  return share === null || share === undefined ? '—' : `${(share * 100).toFixed(1)}%`;
}

/** What a session or link sells, in one line: `2 × T-shirt, Mug`; null lines (an amount alone) → `—`. */
export function lineSummary(items: { name: string; quantity: number }[] | null | undefined): string {
  if (!items?.length) return '—';
  return items.map((i) => (i.quantity === 1 ? i.name : `${i.quantity} × ${i.name}`)).join(', ');
}

const day = new Intl.DateTimeFormat('en-US', { dateStyle: 'medium' });

/** A billing period as dates: `Nov 1, 2026 – Dec 1, 2026`. */
export function period(start: string | null | undefined, end: string | null | undefined): string {
  if (!start || !end) return '—';
  return `${day.format(new Date(start))} – ${day.format(new Date(end))}`;
}

/** A date without its time (a renewal, a trial's end): `Dec 1, 2026`. */
export function date(value: string | null | undefined): string {
  return value ? day.format(new Date(value)) : '—';
}

/** What is left until a deadline, coarsely (`6 d 23 h`, `4 h 10 min`, `45 s`); null once it has passed. */
export function timeLeft(value: string, now = Date.now()): string | null {
  const ms = new Date(value).getTime() - now;
  if (ms <= 0) return null;
  const s = Math.floor(ms / 1000);
  const [d, h, m] = [Math.floor(s / 86_400), Math.floor((s % 86_400) / 3600), Math.floor((s % 3600) / 60)];
  if (d > 0) return h ? `${d} d ${h} h` : `${d} d`;
  if (h > 0) return m ? `${h} h ${m} min` : `${h} h`;
  return m > 0 ? `${m} min` : `${s} s`;
}
