/**
 * Aligned text tables for the CLI's human output. Cells are made printable
 * first: CRM values can hold control characters, and a terminal would obey
 * an escape sequence hidden in an export.
 */

export interface Column {
  header: string;
  /** Numbers read better right-aligned. */
  align?: 'left' | 'right';
  /** Longer cells are cut with an ellipsis. */
  maxWidth?: number;
}

/** A cell as one printable line: control characters escaped, long text cut. */
export function printable(text: string, maxWidth = Infinity): string {
  // eslint-disable-next-line no-control-regex
  const safe = text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) =>
    c === '\t'
      ? '\\t'
      : c === '\n'
        ? '\\n'
        : c === '\r'
          ? '\\r'
          : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
  return safe.length > maxWidth ? `${safe.slice(0, Math.max(0, maxWidth - 1))}…` : safe;
}

/** Rows under a header, each column as wide as its widest cell; lines joined by "\n". */
export function formatTable(
  columns: readonly Column[],
  rows: readonly (readonly string[])[],
): string {
  const cells = rows.map((r) => columns.map((c, i) => printable(r[i] ?? '', c.maxWidth)));
  const widths = columns.map((c, i) =>
    Math.max(c.header.length, ...cells.map((r) => r[i]!.length)),
  );
  const line = (r: readonly string[]) =>
    r
      .map((cell, i) =>
        columns[i]!.align === 'right' ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!),
      )
      .join('  ')
      .trimEnd();
  return [line(columns.map((c) => c.header)), ...cells.map(line)].join('\n');
}

/** A duration for people: 850 ms, 12.3 s, 4 min 05 s, 2 h 03 min. */
export function formatDuration(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  const s = Math.round(ms / 1_000);
  if (s < 3_600) return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
  const m = Math.round(s / 60);
  return `${Math.floor(m / 60)} h ${String(m % 60).padStart(2, '0')} min`;
}

/** A timestamp to the second, in UTC: `2026-11-22 02:18:31`. */
export function formatTime(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
}
