/**
 * Small arithmetic shared by the sync benchmarks: medians, rates, ratios and
 * the number formats of the tables.
 */

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/**
 * The median item of `xs` by `key`; of an even count, the higher middle one
 * (the slower pass, the costlier run: a figure never flattered by the choice).
 */
export function medianBy<T>(xs: readonly T[], key: (x: T) => number): T {
  if (xs.length === 0) throw new RangeError('medianBy: no items');
  return [...xs].sort((a, b) => key(a) - key(b))[Math.floor(xs.length / 2)]!;
}

/** 12,345 */
export function int(x: number): string {
  return Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : 'n/a';
}

/** 0.97 */
export function ratio(x: number, digits = 2): string {
  return Number.isFinite(x) ? x.toFixed(digits) : 'n/a';
}

/** 12.3 s */
export function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

/** 1.2% */
export function percent(x: number): string {
  return Number.isFinite(x) ? `${(x * 100).toFixed(1)}%` : 'n/a';
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The 1-minute load average, to print beside figures taken on a shared machine. */
export async function loadAverage(): Promise<string> {
  const { loadavg } = await import('node:os');
  return loadavg()[0]!.toFixed(1);
}
