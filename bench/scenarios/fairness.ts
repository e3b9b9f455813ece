/**
 * Fair between jobs (src/queue/fair-share.ts): a small job started during a
 * backfill. One `crm-sync worker` process (BENCH_FAIRNESS_WORKERS) on a
 * private redis-server, the sandbox allowing R requests/s (200; a sliding
 * window) at L = 50 ms, and
 * PLATFORM_RATE_LIMIT = R; runs enqueued as a deployment does, with
 * `crm-sync run JOB --wait --json`. Each pass, on a fresh sandbox and Redis
 * prefix:
 *
 * - alone: the 20,000-row backfill (generated HubSpot companies, a first
 *   sync) by itself;
 * - together: the same backfill, and 8 s after its run started a 100-row
 *   job (other companies) of the same entity.
 *
 * Figures: the small job's completion time, from its run's start (a worker
 * took it) and from its enqueueing to its end; its planning part; the
 * backfill's time (its run's start to its end) together and alone, and the
 * difference against the small job's share (its 100 writes at the paced
 * rate); the pacer's turns booked and the ms its window's echoes moved its
 * schedule, alone and together. Medians of BENCH_FAIRNESS_PASSES passes
 * (default 3).
 *
 * `fairnessCheck()` is the short form for `npm run bench -- check`: one
 * pass of a 2,000-row backfill with the 100-row job started 3 s in.
 * BENCH_FAIRNESS_ROWS sets the backfill's size, BENCH_FAIRNESS_RATE the
 * limit R (default 200), BENCH_FAIRNESS_WORKERS the worker processes
 * (default 1); BENCH_FAIRNESS_TRACE=1 prints the small job's phases as
 * they change.
 */
import { createWriteStream, existsSync, mkdirSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import type { BenchTable, Scenario, ShortForm } from '../run.js';
import { COLUMNS, OUT_DIR, companyRow, csvCell } from '../crm-data.js';
import {
  BenchError,
  cliEnv,
  jobsDir,
  openBenchRedis,
  requireBuild,
  startWorker,
  syncRun,
  type BenchRedis,
  type JobsDir,
} from '../lib/cli.js';
import { ensureSyncExport } from '../lib/exports.js';
import { int, loadAverage, median, ratio, seconds, sleep } from '../lib/measure.js';
import { BENCH_API_KEY, startMeteredSandbox, writePhase } from '../lib/meter.js';
import { closeRedis, connectProducer } from '../../src/redis/connection.js';
import { fixedPace } from '../../src/queue/pacer.js';
import { readPacerCounters } from '../../src/queue/pacer-store.js';
import type { RunRecord } from '../../src/state/runs.js';
import { StateStore } from '../../src/state/store.js';

const R = Number(process.env.BENCH_FAIRNESS_RATE ?? 200);
const WORKERS = Math.max(1, Number(process.env.BENCH_FAIRNESS_WORKERS ?? 1));
const WORKERS_TEXT = WORKERS === 1 ? 'one worker' : `${WORKERS} workers`;
const LATENCY_MS = 50;

export interface FairnessSizes {
  backfill: number;
  small: number;
  /** ms after the backfill's run started that the small job is enqueued. */
  startAfterMs: number;
}

export interface FairnessFigures extends FairnessSizes {
  /** The small job: its run's start (a worker took it) to its end, ms. */
  smallRunMs: number;
  /** The small job: enqueued to ended, ms. */
  smallEnqueuedMs: number;
  /** The small job's planning (its run's `planning` timing), ms. */
  smallPlanningMs: number;
  /** The backfill's run, start to end, with the small job and alone, ms. */
  backfillTogetherMs: number;
  backfillAloneMs: number;
  /** The small job's writes at the paced rate, ms: what the backfill may lose to it. */
  smallShareMs: number;
  /** Writes per second the platform saw over the backfill alone's steady part. */
  aloneRate: number;
  /** Requests the platform answered 429, alone and together (a fixed limit paced under it: none). */
  limitedAlone: number;
  limitedTogether: number;
  /** Turns the pacer booked, alone and together: the small job's share in turns is the difference. */
  bookedAlone: number;
  bookedTogether: number;
  /** ms the window's echoes moved the pacer's schedule (late requests), alone and together. */
  movedAlone: number;
  movedTogether: number;
}

const FULL: FairnessSizes = {
  backfill: Number(process.env.BENCH_FAIRNESS_ROWS ?? 20_000),
  small: 100,
  startAfterMs: 8_000,
};
const SHORT: FairnessSizes = { backfill: 2_000, small: 100, startAfterMs: 3_000 };

/** Writes (once) `rows` companies numbered from `first` on, apart from the backfill's. */
async function ensureOtherExport(first: number, rows: number): Promise<string> {
  mkdirSync(OUT_DIR, { recursive: true });
  const path = join(OUT_DIR, `fairness-${first}-${rows}.csv`);
  if (existsSync(path)) return path;
  const lines = [COLUMNS.map((c) => csvCell(c)).join(',')];
  for (let i = first; i < first + rows; i++)
    lines.push(
      companyRow(i)
        .map((v) => csvCell(v))
        .join(','),
    );
  const tmp = `${path}.tmp`;
  await new Promise<void>((resolve, reject) => {
    const out = createWriteStream(tmp);
    out.on('error', reject);
    out.end(`${lines.join('\n')}\n`, () => resolve());
  });
  renameSync(tmp, path);
  return path;
}

/** The run record of a job's only run under `prefix`, once it exists. */
async function runOf(store: StateStore, job: string): Promise<RunRecord | undefined> {
  return (await store.runs.list({ job, limit: 1 }))[0];
}

interface Pass {
  backfill: RunRecord;
  small?: RunRecord;
  aloneRate: number;
  /** Requests the sandbox answered 429. */
  limited: number;
  /** The pacer's turns booked, and ms its schedule was moved by echoes (`<prefix>:pacer`). */
  booked: number;
  moved: number;
}

/** One sync on a fresh sandbox and prefix: the backfill, and the small job `startAfterMs` into it. */
async function pass(
  redis: BenchRedis,
  jobs: JobsDir,
  sizes: FairnessSizes,
  withSmall: boolean,
  name: string,
): Promise<Pass> {
  const sandbox = await startMeteredSandbox({
    rateLimit: `${R}/s`,
    rateLimitMode: 'sliding',
    latencyMs: LATENCY_MS,
  });
  const prefix = redis.prefix(name);
  const env = cliEnv({
    redisUrl: redis.url,
    prefix,
    baseUrl: sandbox.url,
    apiKey: BENCH_API_KEY,
    rateLimit: R,
    jobs: jobs.dir,
    extra: { PLATFORM_LATENCY_HINT_MS: String(LATENCY_MS) },
  });
  const workers = Array.from({ length: WORKERS }, () => startWorker(env));
  const conn = await connectProducer(redis.url);
  const store = new StateStore(conn, { prefix });
  const timeoutMs = Math.max(300_000, (sizes.backfill / R) * 4_000);
  try {
    const before = await sandbox.totals();
    const rec = sandbox.record(200);
    const backfill = syncRun('backfill', env, { withWorker: false, timeoutMs });
    // Awaited below; a failure while the small job waits must not go unhandled.
    backfill.catch(() => undefined);
    let small: Promise<unknown> | undefined;
    if (withSmall) {
      let started: number | undefined;
      const deadline = Date.now() + timeoutMs;
      while (started === undefined) {
        if (Date.now() > deadline) throw new BenchError('the backfill never started');
        started = (await runOf(store, 'backfill'))?.startedAt;
        if (started === undefined) await sleep(50);
      }
      await sleep(Math.max(0, started + sizes.startAfterMs - Date.now()));
      small = syncRun('small', env, { withWorker: false, timeoutMs });
    }
    const trace = withSmall && process.env.BENCH_FAIRNESS_TRACE ? traceSmall(store) : undefined;
    await Promise.all([backfill, small]);
    await trace?.stop();
    const samples = await rec.stop();
    const b = (await runOf(store, 'backfill'))!;
    if (b.counts.created !== sizes.backfill)
      throw new BenchError(
        `${name}: the backfill created ${b.counts.created} of ${sizes.backfill}`,
      );
    const s = withSmall ? await runOf(store, 'small') : undefined;
    if (s && s.counts.created !== sizes.small)
      throw new BenchError(`${name}: the small job created ${s.counts.created} of ${sizes.small}`);
    return {
      backfill: b,
      ...(s && { small: s }),
      aloneRate: writePhase(samples).steadyRate,
      limited: (await sandbox.totals()).rateLimited - before.rateLimited,
      ...(await readPacerCounters(conn, prefix)),
    };
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
    await closeRedis(conn);
    await sandbox.close();
  }
}

/**
 * BENCH_FAIRNESS_TRACE=1: the small job's status, phase and settled writes
 * on stderr as they change, with the backfill's settled writes and the ms
 * since the trace began.
 */
function traceSmall(store: StateStore): { stop(): Promise<void> } {
  const t0 = Date.now();
  let going = true;
  let last = '';
  const loop = (async () => {
    while (going) {
      const s = await runOf(store, 'small');
      const b = await runOf(store, 'backfill');
      const now = s ? `${s.status} ${s.phase ?? ''} ${s.counts.writesSettled}` : 'not yet';
      if (now !== last) {
        last = now;
        process.stderr.write(
          `small +${Date.now() - t0} ms: ${now} (backfill settled ${b?.counts.writesSettled})\n`,
        );
      }
      await sleep(25);
    }
  })();
  return {
    async stop() {
      going = false;
      await loop;
    },
  };
}

const runMs = (r: RunRecord): number => r.finishedAt! - (r.startedAt ?? r.createdAt);

/** `passes` pairs of passes (alone, together); the medians of each figure. */
async function measure(sizes: FairnessSizes, passes: number): Promise<FairnessFigures[]> {
  requireBuild();
  const backfillPath = await ensureSyncExport(sizes.backfill, false);
  const smallPath = await ensureOtherExport(1_000_000, sizes.small);
  const redis = await openBenchRedis();
  const jobs = jobsDir();
  jobs.write('backfill', backfillPath);
  jobs.write('small', smallPath);
  const out: FairnessFigures[] = [];
  try {
    for (let i = 0; i < passes; i++) {
      const alone = await pass(redis, jobs, sizes, false, `alone-${i}`);
      const together = await pass(redis, jobs, sizes, true, `together-${i}`);
      const s = together.small!;
      const figures: FairnessFigures = {
        ...sizes,
        smallRunMs: runMs(s),
        smallEnqueuedMs: s.finishedAt! - s.createdAt,
        smallPlanningMs: s.timings.planning ?? NaN,
        backfillTogetherMs: runMs(together.backfill),
        backfillAloneMs: runMs(alone.backfill),
        smallShareMs: (sizes.small / fixedPace(R)) * 1_000,
        aloneRate: alone.aloneRate,
        limitedAlone: alone.limited,
        limitedTogether: together.limited,
        bookedAlone: alone.booked,
        bookedTogether: together.booked,
        movedAlone: alone.moved,
        movedTogether: together.moved,
      };
      process.stderr.write(`fairness pass ${i + 1}: ${JSON.stringify(figures)}\n`);
      out.push(figures);
    }
  } finally {
    jobs.remove();
    await redis.close();
  }
  return out;
}

/** The target's figure: the backfill beside the small job over alone plus the small job's share. */
function overAlonePlusShare(f: FairnessFigures): number {
  return f.backfillTogetherMs / (f.backfillAloneMs + f.smallShareMs);
}

/** The short form for `npm run bench -- check`: one pass of a 2,000-row backfill. */
export async function fairnessCheck(): Promise<FairnessFigures> {
  return (await measure(SHORT, 1))[0]!;
}

/** The check's short form: one pass, a 100-row job 3 s into a 2,000-row backfill. */
export const shortForm: ShortForm = {
  what: `a ${SHORT.small}-row job ${SHORT.startAfterMs / 1000} s into a ${int(SHORT.backfill)}-row backfill, one pass`,
  async measure() {
    const f = await fairnessCheck();
    return {
      smallRunSeconds: f.smallRunMs / 1000,
      backfillOverAlonePlusShare: overAlonePlusShare(f),
    };
  },
};

const PASSES = Number(process.env.BENCH_FAIRNESS_PASSES ?? 3);

const scenario: Scenario = {
  name: 'fairness',
  description: `a ${FULL.small}-row job started ${FULL.startAfterMs / 1000} s into a ${int(FULL.backfill)}-row backfill, ${WORKERS_TEXT}, R = ${R}/s, L = ${LATENCY_MS} ms`,
  async run(): Promise<BenchTable[]> {
    const load0 = await loadAverage();
    const passes = await measure(FULL, PASSES);
    const load1 = await loadAverage();
    const m = (f: (x: FairnessFigures) => number) => median(passes.map(f));
    const extra = m((x) => x.backfillTogetherMs - x.backfillAloneMs);
    return [
      {
        title: `A ${FULL.small}-row job started ${FULL.startAfterMs / 1000} s into a ${int(FULL.backfill)}-row backfill (medians of ${PASSES} passes)`,
        columns: ['figure', 'median', 'each pass'],
        rows: [
          [
            'small job: its run started to ended',
            seconds(m((x) => x.smallRunMs)),
            each(passes, (x) => x.smallRunMs),
          ],
          [
            'small job: enqueued to ended',
            seconds(m((x) => x.smallEnqueuedMs)),
            each(passes, (x) => x.smallEnqueuedMs),
          ],
          [
            '… of which planning',
            seconds(m((x) => x.smallPlanningMs)),
            each(passes, (x) => x.smallPlanningMs),
          ],
          [
            'backfill alone: run started to ended',
            seconds(m((x) => x.backfillAloneMs)),
            each(passes, (x) => x.backfillAloneMs),
          ],
          [
            'backfill with the small job',
            seconds(m((x) => x.backfillTogetherMs)),
            each(passes, (x) => x.backfillTogetherMs),
          ],
          [
            'backfill: with / alone',
            ratio(
              m((x) => x.backfillTogetherMs / x.backfillAloneMs),
              3,
            ),
            passes.map((x) => ratio(x.backfillTogetherMs / x.backfillAloneMs, 3)).join(', '),
          ],
          [
            'backfill: with − alone',
            seconds(extra),
            each(passes, (x) => x.backfillTogetherMs - x.backfillAloneMs),
          ],
          [
            "the small job's share (its writes at the paced rate)",
            seconds(m((x) => x.smallShareMs)),
            '',
          ],
          [
            'backfill with ÷ (alone + share) (target ≤ 1)',
            ratio(m(overAlonePlusShare), 4),
            passes.map((x) => ratio(overAlonePlusShare(x), 4)).join(', '),
          ],
          [
            'writes/s the platform saw, backfill alone (steady)',
            ratio(
              m((x) => x.aloneRate),
              1,
            ),
            passes.map((x) => ratio(x.aloneRate, 1)).join(', '),
          ],
          [
            "the pacer's turns, alone / with the small job",
            '',
            passes.map((x) => `${int(x.bookedAlone)} / ${int(x.bookedTogether)}`).join(', '),
          ],
          [
            "ms the window's echoes moved its schedule, alone / with the small job",
            '',
            passes
              .map((x) => `${Math.round(x.movedAlone)} / ${Math.round(x.movedTogether)}`)
              .join(', '),
          ],
          [
            '429s, backfill alone / with the small job',
            '',
            passes.map((x) => `${x.limitedAlone} / ${x.limitedTogether}`).join(', '),
          ],
        ],
        notes: [
          `${WORKERS_TEXT} (\`crm-sync worker\`), PLATFORM_RATE_LIMIT=${R} (paced at ${ratio(fixedPace(R), 0)}/s) against the sandbox's ${R}/s sliding window, L = ${LATENCY_MS} ms; each pass on a fresh sandbox and Redis prefix`,
          `a run's time is from its start (a worker took it) to its end, from its record; the small job's rows are other companies of the same entity`,
          `load average ${load0} before, ${load1} after`,
        ],
      },
    ];
  },
};

function each(passes: readonly FairnessFigures[], f: (x: FairnessFigures) => number): string {
  return passes.map((x) => seconds(f(x))).join(', ');
}

export default scenario;
