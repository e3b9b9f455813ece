/**
 * A limit that learns: first syncs of generated HubSpot companies against a
 * sandbox that throttles as a DRF platform does (a sliding log per key), by
 * the built CLI (`crm-sync run JOB --with-worker --wait`), each on a fresh
 * sandbox and a fresh Redis prefix (so `auto` starts from nothing):
 *
 * (a) PLATFORM_RATE_LIMIT=auto, true limit 100/s, 20,000 rows, L = 50 ms;
 * (b) auto, true limit 3000/m (50/s over a minute's window), the same;
 * (c) PLATFORM_RATE_LIMIT=100 against the 100/s sliding window, the same;
 * (d) PLATFORM_RATE_LIMIT=100 against the sandbox's fixed window (for comparison);
 * (e) auto, true limit 100/s, a short first sync: 8,000 rows, L = 40 ms;
 * (f) auto, true limit 1,000/s, 20,000 rows, L = 40 ms, PLATFORM_RATE_LIMIT_MAX=2000;
 * (g) PLATFORM_RATE_LIMIT=200 against a 200/s sliding window, 4,000 rows, L = 40 ms;
 * (h) the same against the sandbox's fixed window.
 *
 * Figures from what the platform saw (its stats, sampled every 200 ms): the
 * write rate between 10% and 90% of the writes ("steady") and from the first
 * write to the last ("overall", start to end) over the limit, the 429s'
 * share of all requests, and the rate the pacer holds at the end (Redis).
 * BENCH_RATE_ROWS sets every case's export size; BENCH_RATE_CASES picks
 * cases (e.g. `a,c`; all by default); BENCH_RATE_CONCURRENCY sets
 * WRITE_CONCURRENCY; BENCH_RATE_TRACE=PATH writes, per case,
 * PATH-<case>.tsv: second by second, the writes and 429s the platform saw
 * and the pacer's state.
 */
import { Redis } from 'ioredis';
import type { BenchTable, Scenario, ShortForm } from '../run.js';
import {
  cliEnv,
  jobsDir,
  openBenchRedis,
  requireBuild,
  syncRun,
  type BenchRedis,
  type JobsDir,
} from '../lib/cli.js';
import { ensureSyncExport } from '../lib/exports.js';
import { int, loadAverage, percent, ratio, seconds } from '../lib/measure.js';
import { BENCH_API_KEY, startMeteredSandbox, writePhase, type Sample } from '../lib/meter.js';
import { writeFileSync } from 'node:fs';
import { readPacerState, type PacerView } from '../../src/queue/pacer-store.js';
import { FIXED_MARGIN, fixedPace } from '../../src/queue/pacer.js';

const ROWS = process.env.BENCH_RATE_ROWS ? Number(process.env.BENCH_RATE_ROWS) : undefined;

interface Case {
  id: string;
  what: string;
  /** The sandbox's limit, as DRF writes it, and its per-second equivalent. */
  limit: string;
  perSecond: number;
  mode: 'sliding' | 'fixed';
  /** PLATFORM_RATE_LIMIT. */
  setting: string;
  rows: number;
  latencyMs: number;
  /** PLATFORM_RATE_LIMIT_MAX (auto), when not the default. */
  max?: number;
}

const CASES: Case[] = [
  { id: 'a', what: 'auto', limit: '100/s', perSecond: 100, mode: 'sliding', setting: 'auto' },
  { id: 'b', what: 'auto', limit: '3000/m', perSecond: 50, mode: 'sliding', setting: 'auto' },
  { id: 'c', what: 'fixed 100', limit: '100/s', perSecond: 100, mode: 'sliding', setting: '100' },
  {
    id: 'd',
    what: 'fixed 100, fixed-window sandbox',
    limit: '100/s',
    perSecond: 100,
    mode: 'fixed',
    setting: '100',
  },
].map((c) => ({ ...c, mode: c.mode as Case['mode'], rows: 20_000, latencyMs: 50 }));
CASES.push(
  {
    id: 'e',
    what: 'auto, short sync',
    limit: '100/s',
    perSecond: 100,
    mode: 'sliding',
    setting: 'auto',
    rows: 8_000,
    latencyMs: 40,
  },
  {
    id: 'f',
    what: 'auto, max 2000',
    limit: '1000/s',
    perSecond: 1_000,
    mode: 'sliding',
    setting: 'auto',
    rows: 20_000,
    latencyMs: 40,
    max: 2_000,
  },
  {
    id: 'g',
    what: 'fixed 200',
    limit: '200/s',
    perSecond: 200,
    mode: 'sliding',
    setting: '200',
    rows: 4_000,
    latencyMs: 40,
  },
  {
    id: 'h',
    what: 'fixed 200, fixed-window sandbox',
    limit: '200/s',
    perSecond: 200,
    mode: 'fixed',
    setting: '200',
    rows: 4_000,
    latencyMs: 40,
  },
);

/** One run of a case, as the platform and the run record saw it. */
interface Result {
  size: number;
  /** Rows over the run's duration (startedAt to finishedAt), over the limit. */
  wholeShare: number;
  /** First write to last at the platform (its stats sampled every 200 ms), over the limit. */
  writingShare: number;
  steadyShare: number;
  steadyRate: number;
  wallMs: number;
  limited: number;
  requests: number;
  end: string;
}

export default {
  name: 'rate',
  description:
    'first syncs of generated companies against a DRF throttle: PLATFORM_RATE_LIMIT=auto and fixed',
  async run(): Promise<BenchTable[]> {
    requireBuild();
    const wanted = process.env.BENCH_RATE_CASES?.split(',') ?? CASES.map((c) => c.id);
    const load0 = await loadAverage();
    const redis = await openBenchRedis();
    const admin = new Redis(redis.url);
    const jobs = jobsDir();
    const rows: (string | number)[][] = [];
    try {
      for (const c of CASES.filter((x) => wanted.includes(x.id))) {
        const r = await runCase(c, 0, { redis, admin, jobs });
        rows.push([
          `(${c.id}) ${c.what}`,
          `${c.limit} ${c.mode}`,
          `${int(r.size)}, ${c.latencyMs} ms`,
          ratio(r.steadyRate, 1),
          ratio(r.steadyShare),
          ratio(r.writingShare),
          int(r.limited),
          percent(r.limited / r.requests),
          r.end,
          seconds(r.wallMs),
        ]);
        process.stderr.write(`rate ${c.id}: ${rows.at(-1)!.join(' | ')}\n`);
      }
    } finally {
      jobs.remove();
      admin.disconnect();
      await redis.close();
    }
    const load1 = await loadAverage();
    return [
      {
        title: 'First syncs of generated companies against a DRF throttle',
        columns: [
          'PLATFORM_RATE_LIMIT',
          'sandbox limit',
          'rows, L',
          'steady writes/s',
          'steady / limit',
          'overall / limit',
          '429s',
          '429 share of requests',
          'pacer rate at the end',
          'wall time',
        ],
        rows,
        notes: [
          'steady: writes the sandbox accepted between 10% and 90% of them, per second; overall: first write to last',
          `each case on a fresh sandbox and Redis prefix: auto starts at 5/s with nothing learned; the fixed rate is paced ${Math.round((1 - FIXED_MARGIN) * 100)}% under PLATFORM_RATE_LIMIT`,
          `PLATFORM_LATENCY_HINT_MS = the sandbox's latency L; load average ${load0} before, ${load1} after`,
        ],
      },
    ];
  },
} satisfies Scenario;

async function runCase(
  c: Case,
  run: number,
  /** `rows` overrides the case's size and BENCH_RATE_ROWS (the check's short form). */
  on: { redis: BenchRedis; admin: Redis; jobs: JobsDir; rows?: number },
): Promise<Result> {
  const size = on.rows ?? ROWS ?? c.rows;
  on.jobs.write('companies', await ensureSyncExport(size, false));
  const sandbox = await startMeteredSandbox({
    rateLimit: c.limit,
    rateLimitMode: c.mode,
    latencyMs: c.latencyMs,
  });
  try {
    const prefix = on.redis.prefix(`rate-${c.id}-${run}`);
    const env = cliEnv({
      redisUrl: on.redis.url,
      prefix,
      baseUrl: sandbox.url,
      apiKey: BENCH_API_KEY,
      rateLimit: 0,
      jobs: on.jobs.dir,
      extra: {
        PLATFORM_RATE_LIMIT: c.setting,
        PLATFORM_LATENCY_HINT_MS: String(c.latencyMs),
        ...(c.max && { PLATFORM_RATE_LIMIT_MAX: String(c.max) }),
        ...(process.env.BENCH_RATE_CONCURRENCY && {
          WRITE_CONCURRENCY: process.env.BENCH_RATE_CONCURRENCY,
        }),
      },
    });
    const before = await sandbox.totals();
    const rec = sandbox.record(200);
    const trace = process.env.BENCH_RATE_TRACE ? tracePacer(on.admin, prefix) : undefined;
    const summary = await syncRun('companies', env, {
      withWorker: true,
      timeoutMs: Math.max(300_000, (size / c.perSecond) * 4_000),
    });
    const samples = await rec.stop();
    if (trace)
      writeTrace(`${process.env.BENCH_RATE_TRACE}-${c.id}.tsv`, samples, await trace.stop());
    const after = await sandbox.totals();
    const phase = writePhase(samples);
    if (summary.counts.created !== size)
      throw new Error(`case ${c.id}: created ${summary.counts.created} of ${size}`);
    const startedAt = Date.parse(summary.startedAt ?? summary.createdAt);
    const finishedAt = Date.parse(summary.finishedAt ?? '');
    const st = await readPacerState(on.admin, prefix);
    return {
      size,
      wholeShare: size / ((finishedAt - startedAt) / 1_000) / c.perSecond,
      writingShare: phase.overallRate / c.perSecond,
      steadyShare: phase.steadyRate / c.perSecond,
      steadyRate: phase.steadyRate,
      wallMs: summary.wallMs,
      limited: after.rateLimited - before.rateLimited,
      requests: after.requests - before.requests,
      end:
        c.setting === 'auto'
          ? `${st ? ratio(st.rate, 1) : 'n/a'}/s (limit met near ${st?.mode === 'auto' ? ratio(st.ceiling, 1) : 'n/a'}/s)`
          : `${ratio(fixedPace(Number(c.setting)), 1)}/s (fixed)`,
    };
  } finally {
    await sandbox.close();
  }
}

/** The pacer's state in Redis, read every 500 ms, with the ms since the trace started. */
function tracePacer(admin: Redis, prefix: string) {
  const rows: { t: number; st: PacerView | undefined; now: number }[] = [];
  const t0 = performance.now();
  let going = true;
  const loop = (async () => {
    while (going) {
      rows.push({
        t: performance.now() - t0,
        st: await readPacerState(admin, prefix),
        now: Date.now(),
      });
      await new Promise((r) => setTimeout(r, 500));
    }
  })();
  return {
    async stop() {
      going = false;
      await loop;
      return rows;
    },
  };
}

function writeTrace(
  path: string,
  samples: readonly Sample[],
  states: { t: number; st: PacerView | undefined; now: number }[],
): void {
  const lines = ['s\twrites\t429s\trate\tceiling\tsource\theld_ms'];
  for (let sec = 0; ; sec++) {
    const inSec = samples.filter((x) => x.t >= sec * 1000 && x.t < (sec + 1) * 1000);
    if (inSec.length === 0) break;
    const prev = samples.filter((x) => x.t < sec * 1000).at(-1) ?? samples[0]!;
    const last = inSec.at(-1)!;
    const st = states.filter((x) => x.t < (sec + 1) * 1000).at(-1);
    const v = st?.st;
    lines.push(
      [
        sec,
        last.writes - prev.writes,
        last.rateLimited - prev.rateLimited,
        v ? v.rate.toFixed(1) : '',
        v?.mode === 'auto' ? v.ceiling.toFixed(1) : '',
        v?.mode === 'auto' ? v.source : '',
        v && st ? Math.max(0, v.notBefore - st.now) : '',
      ].join('\t'),
    );
  }
  writeFileSync(path, `${lines.join('\n')}\n`);
}

/**
 * The check's short form: issue 32's short first syncs, (e) auto against a
 * 100/s sliding window, 8,000 rows, and (g) PLATFORM_RATE_LIMIT=200 against
 * a 200/s one, 4,000 rows; one run each.
 */
export const shortForm: ShortForm = {
  what: 'cases (e) and (g): 8,000 rows at auto against 100/s, 4,000 at a fixed 200 against 200/s',
  async measure() {
    requireBuild();
    const redis = await openBenchRedis();
    const admin = new Redis(redis.url);
    const jobs = jobsDir();
    const out: Record<string, number> = {};
    try {
      for (const c of CASES.filter((x) => x.id === 'e' || x.id === 'g')) {
        const r = await runCase(c, 0, { redis, admin, jobs, rows: c.rows });
        out[`${c.id}.startToEndShareOfLimit`] = r.wholeShare;
        out[`${c.id}.writingShareOfLimit`] = r.writingShare;
        out[`${c.id}.steadyShareOfLimit`] = r.steadyShare;
        out[`${c.id}.rateLimited`] = r.limited;
        out[`${c.id}.rateLimitedShare`] = r.limited / r.requests;
      }
    } finally {
      jobs.remove();
      admin.disconnect();
      await redis.close();
    }
    return out;
  },
};
