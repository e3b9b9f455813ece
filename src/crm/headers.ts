/**
 * CSV header names as the mapping addresses them: a byte-order mark and
 * surrounding spaces removed, blank names dropped (their cells too), and
 * duplicates made addressable by a counter: `Associated Company IDs`,
 * `Associated Company IDs (2)`, …
 */
export interface HeaderColumn {
  /** The addressable name. */
  name: string;
  /** Index of the cell in each row. */
  index: number;
}

export function normaliseHeader(raw: readonly string[]): HeaderColumn[] {
  const columns: HeaderColumn[] = [];
  const taken = new Set<string>();
  const trimmed = raw.map((h) => h.replace(/^\uFEFF/, '').trim());
  // Names as written win over generated ones: `X (2)` in the file keeps its name.
  for (const h of trimmed) if (h !== '') taken.add(h);
  const seen = new Set<string>();
  trimmed.forEach((name, index) => {
    if (name === '') return;
    if (!seen.has(name)) {
      seen.add(name);
      columns.push({ name, index });
      return;
    }
    let n = 2;
    while (taken.has(`${name} (${n})`) || seen.has(`${name} (${n})`)) n++;
    const unique = `${name} (${n})`;
    seen.add(unique);
    columns.push({ name: unique, index });
  });
  return columns;
}
