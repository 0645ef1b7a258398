/**
 * Money as people read it. Amounts are integers in the currency's minor units (docs/payments.md), and
 * not every currency has two decimals (JPY none, KWD three), so the decimals come from the currency.
 */

/** How many decimals the currency's minor unit has (ISO 4217, as Intl knows it); two when Intl does not know the code. */
export function minorUnitDigits(currency: string): number {
  try {
    return new Intl.NumberFormat('en-US', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ?? 2;
  } catch {
    return 2;
  }
}

/** 1234 USD → `$12.34`; 500 JPY → `¥500`; a code Intl does not know → `12.34 XYZ`. */
export function formatMoney(amount: number, currency: string): string {
  const code = currency.toUpperCase();
  const digits = minorUnitDigits(code);
  const major = amount / 10 ** digits;
  try {
    return new Intl.NumberFormat('en-US', { style: 'currency', currency: code, minimumFractionDigits: digits, maximumFractionDigits: digits }).format(major);
  } catch {
    return `${major.toFixed(digits)} ${code}`;
  }
}

/** 2599 USD → `25.99 USD`; 500 JPY → `500 JPY`; 1234 KWD → `1.234 KWD`: the plain form of operators' summaries in Temporal. */
export function plainAmount(amount: number, currency: string): string {
  const code = currency.toUpperCase();
  const digits = minorUnitDigits(code);
  return `${(amount / 10 ** digits).toFixed(digits)} ${code}`;
}
