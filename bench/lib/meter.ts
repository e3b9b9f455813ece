/**
 * A sandbox in the bench process with a meter on it: `/__sandbox/stats` is
 * read every `intervalMs`, so a benchmark can tell the write rate over the
 * steady part of a sync (ramp-up and tail left out), the 429s and the
 * listing calls, all from what the platform saw rather than what the client
 * believes it sent.
 */
import {
  startSandbox,
  type RequestEntry,
  type Sandbox,
  type SandboxOptions,
  type StatsEntry,
} from '@crm-sync/platform-sandbox';
import { REQUEST_LOG_SIZE } from '../../packages/platform-sandbox/src/stats.js';
import { sleep } from './measure.js';

export const BENCH_API_KEY = 'bench-sandbox-key';

export interface Totals {
  /** POST/PUT/PATCH answered 2xx. */
  writes: number;
  /** Requests of any method answered 429. */
  rateLimited: number;
  /** GET /companies and GET /members (listing pages), any status. */
  listing: number;
  /** Every platform request, any status. */
  requests: number;
}

export interface Sample extends Totals {
  /** ms since the meter started. */
  t: number;
}

export function totalsOf(stats: readonly StatsEntry[]): Totals {
  const t: Totals = { writes: 0, rateLimited: 0, listing: 0, requests: 0 };
  for (const e of stats) {
    t.requests += e.count;
    if (e.status === 429) t.rateLimited += e.count;
    const write = e.method === 'POST' || e.method === 'PUT' || e.method === 'PATCH';
    if (write && e.status >= 200 && e.status < 300) t.writes += e.count;
    if (e.method === 'GET' && (e.route === '/companies' || e.route === '/members'))
      t.listing += e.count;
  }
  return t;
}

export function minus(a: Totals, b: Totals): Totals {
  return {
    writes: a.writes - b.writes,
    rateLimited: a.rateLimited - b.rateLimited,
    listing: a.listing - b.listing,
    requests: a.requests - b.requests,
  };
}

export interface MeteredSandbox {
  sandbox: Sandbox;
  url: string;
  totals(): Promise<Totals>;
  /** The latest requests (up to the sandbox's REQUEST_LOG_SIZE), each with its arrival time. */
  requests(): Promise<RequestEntry[]>;
  /** Samples from now until `stop()`, every `intervalMs`. */
  record(intervalMs?: number): { stop(): Promise<Sample[]> };
  close(): Promise<void>;
}

export async function startMeteredSandbox(
  opts: Omit<SandboxOptions, 'apiKey' | 'port'> = {},
): Promise<MeteredSandbox> {
  const sandbox = await startSandbox({ apiKey: BENCH_API_KEY, port: 0, ...opts });
  const totals = async (): Promise<Totals> => {
    const res = await fetch(`${sandbox.url}/__sandbox/stats`);
    return totalsOf(((await res.json()) as { requests: StatsEntry[] }).requests);
  };
  const requests = async (): Promise<RequestEntry[]> => {
    const res = await fetch(`${sandbox.url}/__sandbox/requests`);
    return ((await res.json()) as { requests: RequestEntry[] }).requests;
  };
  return {
    sandbox,
    url: sandbox.url,
    totals,
    requests,
    record(intervalMs = 200) {
      const samples: Sample[] = [];
      const t0 = performance.now();
      let going = true;
      const loop = (async () => {
        while (going) {
          const t = await totals();
          samples.push({ t: performance.now() - t0, ...t });
          await sleep(intervalMs);
        }
      })();
      return {
        async stop() {
          going = false;
          await loop;
          const t = await totals();
          samples.push({ t: performance.now() - t0, ...t });
          return samples;
        },
      };
    },
    close: () => sandbox.close(),
  };
}

/** The time (ms) at which the successful writes first reached `count`, interpolated. */
function timeAt(samples: readonly Sample[], count: number): number {
  for (let i = 1; i < samples.length; i++) {
    const a = samples[i - 1]!;
    const b = samples[i]!;
    if (b.writes >= count) {
      if (b.writes === a.writes) return b.t;
      return a.t + ((count - a.writes) / (b.writes - a.writes)) * (b.t - a.t);
    }
  }
  return NaN;
}

export interface WritePhase {
  /** Writes per second between 10% and 90% of the writes. */
  steadyRate: number;
  /** Writes per second from the first write to the last. */
  overallRate: number;
  /** ms from the first write to the last. */
  writingMs: number;
  writes: number;
  rateLimited: number;
}

/** The write phase of a recording: rate over its steady part and over the whole. */
export function writePhase(samples: readonly Sample[]): WritePhase {
  const first = samples[0]!;
  const last = samples[samples.length - 1]!;
  const writes = last.writes - first.writes;
  const at = (share: number): number => timeAt(samples, first.writes + share * writes);
  const t10 = at(0.1);
  const t90 = at(0.9);
  const start = at(1 / Math.max(1, writes));
  const end = at(1);
  return {
    steadyRate: (0.8 * writes) / ((t90 - t10) / 1000),
    overallRate: writes / ((end - start) / 1000),
    writingMs: end - start,
    writes,
    rateLimited: last.rateLimited - first.rateLimited,
  };
}

/** A successful write (POST, PUT, PATCH answered 2xx) in the sandbox's request log. */
export function isWrite(e: RequestEntry): boolean {
  const write = e.method === 'POST' || e.method === 'PUT' || e.method === 'PATCH';
  return write && e.status >= 200 && e.status < 300;
}

/**
 * When the platform saw the first and the last successful write of a run
 * (ms since the epoch, its arrival clock), and the requests its throttle
 * let through (every status but 429), when the log still held them all:
 * the log is read every `intervalMs` until a write shows (it then still
 * holds the first; it keeps the latest REQUEST_LOG_SIZE requests), and
 * once more at `stop`.
 */
export function watchWrites(
  sandbox: Pick<MeteredSandbox, 'requests'>,
  intervalMs = 250,
): {
  stop(): Promise<{ firstAt: number; lastAt: number; passed?: number[]; log?: RequestEntry[] }>;
} {
  let firstAt = NaN;
  let going = true;
  let early: RequestEntry[] = [];
  const loop = (async () => {
    while (going && Number.isNaN(firstAt)) {
      early = await sandbox.requests();
      const writes = early.filter(isWrite);
      if (writes.length > 0) firstAt = Math.min(...writes.map((e) => e.at));
      else await sleep(intervalMs);
    }
  })();
  return {
    async stop() {
      going = false;
      await loop;
      const all = await sandbox.requests();
      const writes = all.filter(isWrite);
      let lastAt = NaN;
      for (const e of writes) if (!(e.at <= lastAt)) lastAt = e.at;
      if (Number.isNaN(firstAt) && writes.length > 0)
        firstAt = Math.min(...writes.map((e) => e.at));
      // The log reaches back to the first request only if it never dropped any.
      const whole = all.length < REQUEST_LOG_SIZE && all.length >= early.length;
      const passed = whole
        ? all
            .filter((e) => e.status !== 429)
            .map((e) => e.at)
            .sort((a, b) => a - b)
        : undefined;
      return { firstAt, lastAt, ...(passed && { passed, log: all }) };
    },
  };
}

/**
 * The most arrival times (sorted, ms) in any window of `periodMs` (a
 * sliding log's view, as DRF counts), and in any window aligned on the
 * clock (a fixed window's).
 */
export function mostInWindow(
  times: readonly number[],
  periodMs = 1_000,
): { sliding: number; aligned: number } {
  let sliding = 0;
  let from = 0;
  for (let i = 0; i < times.length; i++) {
    while (times[i]! - times[from]! >= periodMs) from++;
    sliding = Math.max(sliding, i - from + 1);
  }
  const perWindow = new Map<number, number>();
  for (const t of times) {
    const w = Math.floor(t / periodMs);
    perWindow.set(w, (perWindow.get(w) ?? 0) + 1);
  }
  return { sliding, aligned: Math.max(0, ...perWindow.values()) };
}
