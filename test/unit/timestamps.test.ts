import { describe, expect, it } from 'vitest';
import pg from 'pg';
import { iso, isoFromJsonTimestamp, isoFromPostgresUtc } from '../../lib/timestamps';

// What pg made of a timestamptz's text before (a Date, through pg-types' parser), shown as the API shows it.
const parsedTimestamptz = pg.types.getTypeParser(pg.types.builtins.TIMESTAMPTZ, 'text') as (text: string) => Date;
const viaDate = (text: string) => parsedTimestamptz(text).toISOString();

describe('timestamps', () => {
  it("turns Postgres's UTC text into the API's form exactly as the Date path does, for every millisecond and a microsecond fraction", () => {
    const texts: string[] = ['2026-11-25 20:15:12+00', '0999-01-01 00:00:00+00', '2024-02-29 23:59:59.999999+00', '1970-01-01 00:00:00.0001+00'];
    for (let ms = 0; ms < 1000; ms++) {
      const fraction = String(ms).padStart(3, '0');
      texts.push(`2026-03-01 10:00:0${ms % 10}.${fraction}+00`, `2025-12-31 23:59:59.${fraction.replace(/0+$/, '') || '0'}+00`,
        `2026-07-04 12:34:56.${fraction}${String((ms * 7919) % 1000).padStart(3, '0')}+00`);
    }
    for (const text of texts) expect([text, isoFromPostgresUtc(text)]).toEqual([text, viaDate(text)]);
  });

  it('leaves text in any other zone or shape to the Date path', () => {
    for (const text of ['2026-03-01 15:30:00.123+05:30', '2026-03-01 10:00:00.123-08', '12026-03-01 10:00:00+00', '0044-03-15 12:00:00+00 BC', 'infinity', '']) {
      expect(isoFromPostgresUtc(text)).toBeUndefined();
    }
  });

  it("turns Postgres's JSON timestamps into the API's form as a Date would, in UTC by the text and in any other offset through a Date", () => {
    const texts = ['2026-11-25T20:15:12+00:00', '2024-02-29T23:59:59.999999+00:00', '1970-01-01T00:00:00.0001+00:00', '2026-03-01T15:30:00.123+05:30',
      '2026-03-01T06:30:00.12-03:30', '0999-01-01T00:00:00+00:00'];
    for (let ms = 0; ms < 1000; ms += 7) texts.push(`2026-03-01T10:00:0${ms % 10}.${String(ms).padStart(3, '0').replace(/0+$/, '') || '0'}+00:00`);
    for (const text of texts) expect([text, isoFromJsonTimestamp(text)]).toEqual([text, new Date(text).toISOString()]);
  });

  it('shows a Date, and any date text, in the API form; text already in it passes as it is', () => {
    expect(iso(new Date(Date.UTC(2026, 2, 1, 10, 0, 0, 7)))).toBe('2026-03-01T10:00:00.007Z');
    expect(iso('2026-03-01T10:00:00.007Z')).toBe('2026-03-01T10:00:00.007Z');
    expect(iso('2026-03-01T11:00:00+01:00')).toBe('2026-03-01T10:00:00.000Z');
    expect(iso('2026-03-01T10:00:00Z')).toBe('2026-03-01T10:00:00.000Z');
    expect(iso(null)).toBeNull();
    expect(iso(undefined)).toBeNull();
  });
});
