/** Rows grouped by one of their keys, each group in the rows' order (embeds: one query, then a lookup per parent). */
export function groupBy<T, K extends keyof T>(rows: readonly T[], key: K): Map<T[K], T[]> {
  const map = new Map<T[K], T[]>();
  for (const row of rows) {
    const list = map.get(row[key]);
    if (list) list.push(row);
    else map.set(row[key], [row]);
  }
  return map;
}
