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
 * PATH-<case>.tsv: second by second, the writes and 429s the platform saw,
 * the turns the pacer booked, the ms the window's echoes moved its
 * schedule, and its state; and PATH-<case>-requests.tsv, every request the
 * sandbox logged (ms from the first write, method, status) when its log
 * still held them all.
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
import { int, loadAverage, medianBy, percent, ratio, seconds } from '../lib/measure.js';
import {
  BENCH_API_KEY,
  mostInWindow,
  startMeteredSandbox,
  watchWrites,
  writePhase,
  type Sample,
} from '../lib/meter.js';
import { writeFileSync } from 'node:fs';
import {
  readPacerCounters,
  readPacerState,
  SLOW_START_RATE,
  type PacerView,
} from '../../src/queue/pacer-store.js';
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

/** Runs of each case (BENCH_RATE_RUNS, default 1), the cases taking turns; the median run is shown. */
const RUNS = Math.max(1, Number(process.env.BENCH_RATE_RUNS ?? 1));

/** One run of a case, as the platform and the run record saw it. */
interface Result {
  /** Rows over the run's duration (startedAt to finishedAt), over the limit. */
  wholeShare: number;
  /** First write to last at the platform, over the limit. */
  writingShare: number;
  steadyShare: number;
  steadyRate: number;
  /** Run start to the platform's first write, and its last write to the run's end (ms). */
  leadMs: number;
  tailMs: number;
  /** The run's planning (its `planning` timing): part of the lead. */
  planningMs: number;
  /** Most requests the throttle let through in any 1 s, and in an aligned second. */
  most: string;
  runMs: number;
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
    const cases = CASES.filter((x) => wanted.includes(x.id));
    const load0 = await loadAverage();
    const redis = await openBenchRedis();
    const admin = new Redis(redis.url);
    const jobs = jobsDir();
    const results = new Map<string, Result[]>(cases.map((c) => [c.id, []]));
    try {
      for (let run = 0; run < RUNS; run++) {
        for (const c of cases) {
          const r = await runCase(c, run, { redis, admin, jobs });
          results.get(c.id)!.push(r);
          process.stderr.write(
            `rate ${c.id} run ${run + 1}: start to end ${ratio(r.wholeShare, 3)}, writing ${ratio(r.writingShare)}, ` +
              `lead ${seconds(r.leadMs)} (planning ${seconds(r.planningMs)}), tail ${seconds(r.tailMs)}, 429s ${r.limited}, most in 1 s ${r.most}, load ${await loadAverage()}\n`,
          );
        }
      }
    } finally {
      jobs.remove();
      admin.disconnect();
      await redis.close();
    }
    const load1 = await loadAverage();
    const rows = cases.map((c) => {
      const rs = results.get(c.id)!;
      const m = medianBy(rs, (r) => r.wholeShare);
      // Three decimals: a target of 0.9 or 0.93 is met or missed in the third.
      const range = (f: (r: Result) => number): string =>
        rs.length > 1
          ? ` [${ratio(Math.min(...rs.map(f)), 3)}-${ratio(Math.max(...rs.map(f)), 3)}]`
          : '';
      return [
        `(${c.id}) ${c.what}`,
        `${c.limit} ${c.mode}`,
        `${int(ROWS ?? c.rows)}, ${c.latencyMs} ms`,
        `${ratio(m.wholeShare, 3)}${range((r) => r.wholeShare)}`,
        ratio(m.writingShare),
        ratio(m.steadyShare),
        seconds(m.leadMs),
        seconds(m.planningMs),
        seconds(m.tailMs),
        rs.map((r) => int(r.limited)).join(', '),
        rs.map((r) => r.most).join(', '),
        percent(m.limited / m.requests),
        m.end,
        seconds(m.runMs),
        seconds(m.wallMs),
      ];
    });
    return [
      {
        title: 'First syncs of generated companies against a DRF throttle',
        columns: [
          'PLATFORM_RATE_LIMIT',
          'sandbox limit',
          'rows, L',
          'start to end / limit',
          'first write to last / limit',
          'steady / limit',
          'run start to first write',
          'of which planning',
          'last write to run end',
          '429s (each run)',
          'most let through in any 1 s / an aligned 1 s (each run)',
          '429 share of requests',
          'pacer rate at the end',
          'run',
          'wall time',
        ],
        rows,
        notes: [
          'start to end: rows over the run (its startedAt to its finishedAt, the run record), over the limit; the first and last writes as the sandbox logged their arrival',
          'steady: writes the sandbox accepted between 10% and 90% of them, per second',
          `each case on a fresh sandbox and Redis prefix: auto starts at ${SLOW_START_RATE}/s with nothing learned; the fixed rate is paced at ${ratio(FIXED_MARGIN, 3)} of PLATFORM_RATE_LIMIT`,
          `${RUNS} run(s) per case, the cases taking turns; the median run by start to end, [range]`,
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
    const writes = watchWrites(sandbox);
    const trace = process.env.BENCH_RATE_TRACE ? tracePacer(on.admin, prefix) : undefined;
    const summary = await syncRun('companies', env, {
      withWorker: true,
      timeoutMs: Math.max(300_000, (size / c.perSecond) * 4_000),
    });
    const samples = await rec.stop();
    const { firstAt, lastAt, passed, log } = await writes.stop();
    const most = passed ? mostInWindow(passed) : undefined;
    if (trace) {
      const path = `${process.env.BENCH_RATE_TRACE}-${c.id}${RUNS > 1 ? `-${run + 1}` : ''}`;
      writeTrace(`${path}.tsv`, samples, await trace.stop());
      if (log)
        writeFileSync(
          `${path}-requests.tsv`,
          `ms\tmethod\tstatus\n${log.map((e) => `${e.at - firstAt}\t${e.method}\t${e.status}`).join('\n')}\n`,
        );
    }
    const after = await sandbox.totals();
    const phase = writePhase(samples);
    if (summary.counts.created !== size)
      throw new Error(`case ${c.id}: created ${summary.counts.created} of ${size}`);
    const startedAt = Date.parse(summary.startedAt ?? summary.createdAt);
    const finishedAt = Date.parse(summary.finishedAt ?? '');
    const runMs = finishedAt - startedAt;
    const st = await readPacerState(on.admin, prefix);
    const planningMs = Number(await on.admin.hget(`${prefix}:run:${summary.runId}`, 't:planning'));
    return {
      planningMs,
      most: most ? `${most.sliding} / ${most.aligned}` : 'n/a',
      wholeShare: size / (runMs / 1_000) / c.perSecond,
      writingShare: (size - 1) / ((lastAt - firstAt) / 1_000) / c.perSecond,
      steadyShare: phase.steadyRate / c.perSecond,
      steadyRate: phase.steadyRate,
      leadMs: firstAt - startedAt,
      tailMs: finishedAt - lastAt,
      runMs,
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
interface TraceRow {
  t: number;
  st: PacerView | undefined;
  now: number;
  /** Turns booked, and ms the window's echoes moved the schedule, so far. */
  booked: number;
  moved: number;
}

function tracePacer(admin: Redis, prefix: string) {
  const rows: TraceRow[] = [];
  const t0 = performance.now();
  let going = true;
  const loop = (async () => {
    while (going) {
      const counters = await readPacerCounters(admin, prefix);
      rows.push({
        t: performance.now() - t0,
        st: await readPacerState(admin, prefix),
        now: Date.now(),
        ...counters,
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

function writeTrace(path: string, samples: readonly Sample[], states: TraceRow[]): void {
  const lines = ['s\twrites\t429s\tbooked\tmoved_ms\trate\tceiling\tsource\theld_ms'];
  for (let sec = 0; ; sec++) {
    const inSec = samples.filter((x) => x.t >= sec * 1000 && x.t < (sec + 1) * 1000);
    if (inSec.length === 0) break;
    const prev = samples.filter((x) => x.t < sec * 1000).at(-1) ?? samples[0]!;
    const last = inSec.at(-1)!;
    const st = states.filter((x) => x.t < (sec + 1) * 1000).at(-1);
    const before = states.filter((x) => x.t < sec * 1000).at(-1);
    const v = st?.st;
    lines.push(
      [
        sec,
        last.writes - prev.writes,
        last.rateLimited - prev.rateLimited,
        st ? st.booked - (before?.booked ?? 0) : '',
        st ? Math.round(st.moved - (before?.moved ?? 0)) : '',
        v ? v.rate.toFixed(1) : '',
        v?.mode === 'auto' ? v.ceiling.toFixed(1) : '',
        v?.mode === 'auto' ? v.source : '',
        v && st ? Math.max(0, v.notBefore - st.now) : '',
      ].join('\t'),
    );
  }
  writeFileSync(path, `${lines.join('\n')}\n`);
}

/** The check's short form: cases (e) and (g) once each, at their own sizes. */
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
