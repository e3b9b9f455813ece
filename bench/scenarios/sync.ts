/**
 * Issue 6.1 and 6.2: a first sync and a nightly re-sync of generated HubSpot
 * companies against the sandbox at R = 200 requests/s and L = 50 ms, run by
 * the built CLI (`crm-sync run JOB --with-worker --wait --json`) on a private
 * redis-server, side by side with the naive baseline (bench/baseline.ts).
 *
 * First sync: the write rate the platform saw over the steady part (10% to
 * 90% of the writes) divided by R, and the 429s, with PLATFORM_RATE_LIMIT = R
 * and with the limit unknown (configured 2R). Nightly: the same export with
 * 1% of the rows changed, after the first sync: writes made against the
 * minimum (the changed rows), listing calls apart, wall time against the
 * baseline re-sending every row.
 *
 * BENCH_SYNC_ROWS sets the export size (default 20,000); BENCH_BASELINE_S
 * bounds each baseline pass (default 20 s; its full wall time is projected).
 */
import type { BenchTable, Scenario } from '../run.js';
import { runBaseline, type BaselineResult } from '../baseline.js';
import {
  cliEnv,
  jobsDir,
  openBenchRedis,
  redisCounters,
  requireBuild,
  syncRun,
  type BenchRedis,
  type JobsDir,
} from '../lib/cli.js';
import { changedInNightly, ensureSyncExport } from '../lib/exports.js';
import { int, loadAverage, percent, ratio, seconds } from '../lib/measure.js';
import {
  BENCH_API_KEY,
  minus,
  startMeteredSandbox,
  writePhase,
  type MeteredSandbox,
  type Totals,
  type WritePhase,
} from '../lib/meter.js';

const R = 200;
const LATENCY_MS = 50;
const ROWS = Number(process.env.BENCH_SYNC_ROWS ?? 20_000);
const BASELINE_MS = Number(process.env.BENCH_BASELINE_S ?? 20) * 1000;

interface SyncFigures {
  phase: WritePhase;
  totals: Totals;
  wallMs: number;
  runMs: number;
  created: number;
  updated: number;
  unchanged: number;
  /** CPU seconds of the crm-sync process, of redis-server and of this process (sandbox). */
  cpu: { crmSync: number; redis: number; sandbox: number };
  /** Commands redis-server ran during the run, those of Lua scripts included (INFO commandstats). */
  redisCommands: number;
}

/** One `crm-sync run` with the workers in-process, metered on the sandbox. */
async function meteredRun(
  sandbox: MeteredSandbox,
  redis: BenchRedis,
  jobs: JobsDir,
  opts: { prefix: string; rateLimit: number; source?: string },
): Promise<SyncFigures> {
  const env = cliEnv({
    redisUrl: redis.url,
    prefix: opts.prefix,
    baseUrl: sandbox.url,
    apiKey: BENCH_API_KEY,
    rateLimit: opts.rateLimit,
    jobs: jobs.dir,
  });
  const before = await sandbox.totals();
  const redis0 = await redisCounters(redis.url);
  const self0 = process.cpuUsage();
  const rec = sandbox.record(200);
  const summary = await syncRun('companies', env, {
    withWorker: true,
    timeoutMs: Math.max(180_000, (ROWS / R) * 4_000),
    ...(opts.source !== undefined && { source: opts.source }),
  });
  const samples = await rec.stop();
  const self = process.cpuUsage(self0);
  const redis1 = await redisCounters(redis.url);
  return {
    redisCommands: redis1.calls - redis0.calls,
    cpu: {
      crmSync: summary.cpuS,
      redis: redis1.cpuS - redis0.cpuS,
      sandbox: (self.user + self.system) / 1e6,
    },
    phase: writePhase(samples),
    totals: minus(await sandbox.totals(), before),
    wallMs: summary.wallMs,
    runMs: summary.durationMs ?? NaN,
    created: summary.counts.created,
    updated: summary.counts.updated,
    unchanged: summary.counts.unchanged,
  };
}

async function withSandbox<T>(fn: (s: MeteredSandbox) => Promise<T>): Promise<T> {
  const sandbox = await startMeteredSandbox({ rateLimit: R, latencyMs: LATENCY_MS });
  try {
    return await fn(sandbox);
  } finally {
    await sandbox.close();
  }
}

function check(what: string, got: number, want: number): void {
  if (got !== want) throw new Error(`${what}: expected ${want}, got ${got}`);
}

export default {
  name: 'sync',
  description: `first sync and nightly re-sync of ${ROWS.toLocaleString('en-US')} companies at R = ${R}/s, L = ${LATENCY_MS} ms, against a sequential got + p-retry baseline`,
  async run(): Promise<BenchTable[]> {
    requireBuild();
    const first = await ensureSyncExport(ROWS, false);
    const nightly = await ensureSyncExport(ROWS, true);
    let changed = 0;
    for (let i = 0; i < ROWS; i++) if (changedInNightly(i)) changed++;
    const load0 = await loadAverage();
    const redis = await openBenchRedis();
    const jobs = jobsDir();
    jobs.write('companies', first);
    try {
      // R known, then the nightly re-sync on the same platform and state.
      const known = await withSandbox(async (sandbox) => {
        const prefix = redis.prefix('known');
        const firstSync = await meteredRun(sandbox, redis, jobs, { prefix, rateLimit: R });
        check('first sync created', firstSync.created, ROWS);
        const resync = await meteredRun(sandbox, redis, jobs, {
          prefix,
          rateLimit: R,
          source: nightly,
        });
        check('nightly updated', resync.updated, changed);
        return { firstSync, resync };
      });
      const unknown = await withSandbox(async (sandbox) => {
        const r = await meteredRun(sandbox, redis, jobs, {
          prefix: redis.prefix('unknown'),
          rateLimit: 2 * R,
        });
        check('first sync (limit unknown) created', r.created, ROWS);
        return r;
      });
      const baseline = await withSandbox(async (sandbox) => {
        const opts = {
          baseUrl: sandbox.url,
          apiKey: BENCH_API_KEY,
          totalRows: ROWS,
          budgetMs: BASELINE_MS,
        };
        const create = await runBaseline({ ...opts, path: first });
        const resend = await runBaseline({ ...opts, path: nightly, ids: create.ids });
        return { create, resend };
      });
      const load1 = await loadAverage();
      return tables(
        known.firstSync,
        unknown,
        known.resync,
        baseline,
        changed,
        `${load0} → ${load1}`,
      );
    } finally {
      jobs.remove();
      await redis.close();
    }
  },
} satisfies Scenario;

function tables(
  known: SyncFigures,
  unknown: SyncFigures,
  resync: SyncFigures,
  baseline: { create: BaselineResult; resend: BaselineResult },
  changed: number,
  load: string,
): BenchTable[] {
  const b = baseline.create;
  const n = baseline.resend;
  const share = (t: Totals): string => percent(t.rateLimited / t.requests);
  const crmSyncRow = (label: string, limit: number, f: SyncFigures): (string | number)[] => [
    label,
    limit,
    int(f.phase.steadyRate),
    ratio(f.phase.steadyRate / R),
    int(f.phase.overallRate),
    ratio(f.phase.overallRate / R),
    int(f.totals.rateLimited),
    share(f.totals),
    seconds(f.wallMs),
  ];
  const first: BenchTable = {
    title: `First sync of ${int(ROWS)} companies, R = ${R} req/s, L = ${LATENCY_MS} ms`,
    columns: [
      'writer',
      'PLATFORM_RATE_LIMIT',
      'steady writes/s',
      'steady / R',
      'overall writes/s',
      'overall / R',
      '429s',
      '429 share of requests',
      'wall (whole run)',
    ],
    rows: [
      crmSyncRow('crm-sync (limit known)', R, known),
      crmSyncRow('crm-sync (limit unknown)', 2 * R, unknown),
      [
        `baseline (sequential, ${int(b.sent)} rows in ${seconds(b.ms)})`,
        '-',
        int(b.rate),
        ratio(b.rate / R),
        int(b.rate),
        ratio(b.rate / R),
        int(b.rateLimited),
        percent(b.rateLimited / b.requests),
        `${seconds(b.projectedMs)} (projected)`,
      ],
    ],
    notes: [
      `Rates are successful POSTs per second as the sandbox counted them, sampled every 200 ms; "steady" is 10% to 90% of the writes, "overall" first to last write.`,
      `Wall is the CLI process from start to exit (workers start, listing, planning, writes, verification). crm-sync runs took ${seconds(known.runMs)} and ${seconds(unknown.runMs)} from run start to finish.`,
      `Targets (issue 6.1): steady / R at least 0.95 and 0 429s with the limit known.`,
      `Load average (1 min) before → after the scenario: ${load}, on 2 shared cores.`,
    ],
  };
  // Every platform request but listing pages, 429s and failed writes included.
  const resyncCalls = resync.totals.requests - resync.totals.listing;
  const nightlyTable: BenchTable = {
    title: `Nightly re-sync of the same ${int(ROWS)} companies, ${int(changed)} changed (1%)`,
    columns: [
      'writer',
      'API calls made (listing apart)',
      'minimum (changed rows)',
      'calls / minimum',
      'listing calls',
      '429s',
      'wall',
      'wall vs baseline',
    ],
    rows: [
      [
        'crm-sync',
        int(resyncCalls),
        int(changed),
        ratio(resyncCalls / changed),
        int(resync.totals.listing),
        int(resync.totals.rateLimited),
        seconds(resync.wallMs),
        ratio(resync.wallMs / n.projectedMs, 3),
      ],
      [
        `baseline (PUT every row; ${int(n.sent)} rows in ${seconds(n.ms)})`,
        `${int(ROWS)} (projected)`,
        int(changed),
        ratio(ROWS / changed),
        0,
        int(n.rateLimited),
        `${seconds(n.projectedMs)} (projected)`,
        '1.000',
      ],
    ],
    notes: [
      `crm-sync: ${int(resync.updated)} updated, ${int(resync.unchanged)} unchanged; ${int(resync.totals.writes)} successful writes; ${int(resync.totals.requests)} platform requests in all, listing included.`,
      'Target (issue 6.2): calls / minimum = 1.0 beyond listing.',
    ],
  };
  const cpuRow = (label: string, f: SyncFigures): (string | number)[] => [
    label,
    int(f.totals.writes),
    f.cpu.crmSync.toFixed(1),
    int(f.totals.writes / f.cpu.crmSync),
    ((f.cpu.crmSync * 1000) / Math.max(1, f.totals.writes)).toFixed(2),
    f.cpu.redis.toFixed(1),
    int(f.redisCommands / Math.max(1, f.totals.writes)),
    f.cpu.sandbox.toFixed(1),
  ];
  const cpu: BenchTable = {
    title: 'CPU time of each process during the crm-sync runs',
    columns: [
      'run',
      'writes',
      'crm-sync CPU-s',
      'writes per crm-sync CPU-s',
      'crm-sync CPU ms per write',
      'redis CPU-s',
      'redis commands per write',
      'sandbox + meter CPU-s',
    ],
    rows: [
      cpuRow('first sync, limit known', known),
      cpuRow('first sync, limit unknown', unknown),
      cpuRow('nightly re-sync', resync),
    ],
    notes: [
      'On a shared machine the wall-clock rate depends on the CPU the neighbours leave; writes per CPU-second of the crm-sync process (workers and planning in one process) tell its own cost.',
      'Redis commands per write: the sum of INFO commandstats over the run (commands inside Lua scripts counted), planning and verification included; per write in the steady state, see the sync-cost scenario.',
    ],
  };
  return [first, nightlyTable, cpu];
}
