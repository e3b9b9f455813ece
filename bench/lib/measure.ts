/**
 * Small arithmetic shared by the sync benchmarks: medians, rates, ratios and
 * the number formats of the tables; and what a step costs this process and
 * redis-server.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';

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

/** redis-server's CPU so far (user + system, `INFO cpu`), ms. */
export async function redisCpuMs(redis: {
  info(section: 'cpu'): Promise<string>;
}): Promise<number> {
  const info = await redis.info('cpu');
  const field = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? NaN);
  return (field('used_cpu_user') + field('used_cpu_sys')) * 1000;
}

/** What `fn` cost this process (CPU and wall ms) and the longest it held the event loop (a 1 ms timer's worst delay). */
export interface StepCost<T> {
  value: T;
  cpuMs: number;
  wallMs: number;
  heldMs: number;
}

export async function stepCost<T>(fn: () => Promise<T>): Promise<StepCost<T>> {
  const held = monitorEventLoopDelay({ resolution: 1 });
  held.enable();
  const cpu = process.cpuUsage();
  const t0 = performance.now();
  const value = await fn();
  const wallMs = performance.now() - t0;
  const used = process.cpuUsage(cpu);
  held.disable();
  return { value, cpuMs: (used.user + used.system) / 1000, wallMs, heldMs: held.max / 1e6 };
}
