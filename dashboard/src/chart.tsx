import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
// Bundled by Vite with the rest of the app: nothing is loaded from elsewhere (the CSP allows only 'self').
import 'uplot/dist/uPlot.min.css';

export interface ChartSeries {
  label: string;
  color: string;
  /** Drawn dashed (e.g. a percentile beside the mean in the same colour). */
  dashed?: boolean;
  /** One value per time; null is a gap (no data in that bucket). */
  values: (number | null)[];
}

const HEIGHT = 240;

/**
 * A time-series line chart (uPlot on a canvas) in a figure named by its title, with uPlot's legend (click
 * a label to hide that line) and the same numbers as a table for people who cannot read the canvas.
 * `times` are epoch milliseconds; `format` writes a value the way the axis, legend and table show it;
 * `utc` draws the time axis in UTC (for buckets that are UTC days), else in the browser's time zone.
 */
export function TimeChart({ id, title, description, times, series, format, timeLabel, max, utc, testId }: {
  id: string; title: string; description: string; times: number[]; series: ChartSeries[];
  format: (value: number) => string; timeLabel: (ms: number) => string; max?: number; utc?: boolean; testId?: string;
}) {
  const host = useRef<HTMLDivElement>(null);

  useEffect(() => {
    const el = host.current;
    if (!el) return;
    const opts: uPlot.Options = {
      width: el.clientWidth || 600,
      height: HEIGHT,
      cursor: { sync: { key: 'providers' } },
      ...(utc ? { tzDate: (ts: number) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC') } : {}),
      scales: { y: { range: (_u, _min, dataMax) => [0, max ?? niceMax(dataMax)] } },
      axes: [
        { stroke: '#667085', grid: { stroke: '#eef0f3' }, ticks: { stroke: '#e3e6eb' } },
        { stroke: '#667085', grid: { stroke: '#eef0f3' }, ticks: { stroke: '#e3e6eb' }, size: 64, values: (_u, splits) => splits.map(format) },
      ],
      series: [
        { label: 'Time', value: (_u, v) => (v === null ? '—' : timeLabel(v * 1000)) },
        ...series.map((s): uPlot.Series => ({
          label: s.label,
          stroke: s.color,
          width: 2,
          dash: s.dashed ? [6, 4] : undefined,
          spanGaps: false,
          points: { show: false },
          value: (_u, v) => (v === null ? '—' : format(v)),
        })),
      ],
    };
    const plot = new uPlot(opts, [times.map((t) => t / 1000), ...series.map((s) => s.values)], el);
    // The canvas is a picture of the table below; the legend (a table) stays readable as it is.
    const wrap = plot.root.querySelector('.u-wrap');
    wrap?.setAttribute('role', 'img');
    wrap?.setAttribute('aria-label', description);
    const resize = new ResizeObserver(() => {
      if (el.clientWidth && el.clientWidth !== plot.width) plot.setSize({ width: el.clientWidth, height: HEIGHT });
    });
    resize.observe(el);
    return () => { resize.disconnect(); plot.destroy(); };
  }, [times, series]);

  return (
    <figure class="chart" aria-labelledby={`${id}-title`} data-testid={testId}>
      <figcaption>
        <h3 id={`${id}-title`}>{title}</h3>
        <p class="muted small">{description}</p>
      </figcaption>
      <div class="chart-host" ref={host} />
      <details class="chart-data">
        <summary>Show the numbers</summary>
        <table class="table">
          <thead><tr><th scope="col">Time</th>{series.map((s, j) => <th key={j} scope="col" class="num">{s.label}</th>)}</tr></thead>
          <tbody>
            {times.map((t, i) => (
              <tr key={t}>
                <th scope="row">{timeLabel(t)}</th>
                {series.map((s, j) => <td key={j} class="num">{s.values[i] === null ? '—' : format(s.values[i] as number)}</td>)}
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </figure>
  );
}

/** A round top for a scale that starts at 0 (1, 2, 2.5 or 5 times a power of ten above the largest value). */
function niceMax(value: number | null): number {
  if (!value || value <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  const step = [1, 2, 2.5, 5, 10].find((m) => m * power >= value * 1.05) ?? 10;
  return step * power;
}
