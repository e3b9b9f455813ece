/**
 * Issue 6.4: scale-out. 1, 2 and 3 `crm-sync worker` processes on one Redis
 * (private redis-server) against one platform limit R: the sandbox allows R
 * requests/s and every worker is configured PLATFORM_RATE_LIMIT = R (the
 * limit is global, in Redis). A first sync of generated HubSpot companies is
 * enqueued with `crm-sync run JOB --wait --json`; the aggregate write rate
 * the platform saw over the steady part (10% to 90% of the writes) is
 * compared with R, and the 429s counted.
 *
 * BENCH_SCALE_ROWS sets the export size (default 6,000: 30 s of writes at R);
 * BENCH_SCALE_RATE sets R (default 200), BENCH_SCALE_LATENCY the sandbox's
 * latency (default 50 ms), BENCH_SCALE_WORKERS the worker counts (default
 * `1,2,3`), BENCH_SCALE_RUNS the runs of each (the counts taking turns; the
 * median run by the workers' CPU is shown). The workers' CPU is counted
 * from when they have started and gone idle (their start-up apart) to the
 * run's end, and compared with the first count's. BENCH_SCALE_WARM (rows,
 * default 0) has the workers sync that many other companies first, and
 * counts from when they are idle again: the JIT's and the heap's warm-up of
 * each process apart, as a long-lived worker has it.
 */
import type { BenchTable, Scenario } from '../run.js';
import {
  cliEnv,
  jobsDir,
  openBenchRedis,
  redisCounters,
  requireBuild,
  startWorker,
  syncRun,
  type WorkerProcess,
} from '../lib/cli.js';
import { ensureSyncExport } from '../lib/exports.js';
import { int, loadAverage, medianBy, percent, ratio, seconds, sleep } from '../lib/measure.js';
import { BENCH_API_KEY, minus, startMeteredSandbox, writePhase } from '../lib/meter.js';

const R = Number(process.env.BENCH_SCALE_RATE ?? 200);
const LATENCY_MS = Number(process.env.BENCH_SCALE_LATENCY ?? 50);
const ROWS = Number(process.env.BENCH_SCALE_ROWS ?? 6_000);
const WORKERS = (process.env.BENCH_SCALE_WORKERS ?? '1,2,3').split(',').map(Number);
const RUNS = Math.max(1, Number(process.env.BENCH_SCALE_RUNS ?? 1));
const WARM = Number(process.env.BENCH_SCALE_WARM ?? 0);
/** The warm-up sync's companies: numbered from here, none of the measured ones. */
const WARM_FROM = 10_000_000;

/** One run with k workers. */
interface Result {
  k: number;
  steadyRate: number;
  overallRate: number;
  rateLimited: number;
  requests: number;
  wallMs: number;
  /** Workers' CPU seconds from idle after start-up to the run's end, and of start-up. */
  runCpuS: number;
  /** Of runCpuS, the main threads' (the rest: V8's compiler and GC threads, libuv's pool). */
  runMainCpuS: number;
  startCpuS: number;
  redisCpuS: number;
  redisCalls: number;
  /** Script calls (EVALSHA): the worker's round trips that batch. */
  redisScripts: number;
}

/** Waits until every worker's CPU grows less than 30 ms over half a second: started and idle. */
async function whenIdle(workers: WorkerProcess[]): Promise<void> {
  const until = performance.now() + 30_000;
  let last = workers.map((w) => w.cpuSeconds());
  for (;;) {
    await sleep(500);
    const now = workers.map((w) => w.cpuSeconds());
    if (now.every((c, i) => Number.isFinite(c) && c - last[i]! < 0.03)) return;
    if (performance.now() > until) throw new Error('workers did not go idle within 30 s');
    last = now;
  }
}

const scenario: Scenario = {
  name: 'sync-scale',
  description: `first sync of ${ROWS.toLocaleString('en-US')} companies by 1, 2 and 3 worker processes against one limit R = ${R}/s, L = ${LATENCY_MS} ms`,
  async run(): Promise<BenchTable[]> {
    requireBuild();
    const path = await ensureSyncExport(ROWS, false);
    const load0 = await loadAverage();
    const redis = await openBenchRedis();
    const jobs = jobsDir();
    jobs.write('companies', path);
    if (WARM > 0) jobs.write('warm-up', await ensureSyncExport(WARM, false, WARM_FROM));
    const results: Result[] = [];
    try {
      for (let run = 0; run < RUNS; run++) {
        for (const k of WORKERS) {
          const sandbox = await startMeteredSandbox({ rateLimit: R, latencyMs: LATENCY_MS });
          const env = cliEnv({
            redisUrl: redis.url,
            prefix: redis.prefix(`scale-${k}-${run}`),
            baseUrl: sandbox.url,
            apiKey: BENCH_API_KEY,
            rateLimit: R,
            jobs: jobs.dir,
            extra: { PLATFORM_LATENCY_HINT_MS: String(LATENCY_MS) },
          });
          const workers = Array.from({ length: k }, () => startWorker(env));
          try {
            await whenIdle(workers);
            if (WARM > 0) {
              const warm = await syncRun('warm-up', env, {
                withWorker: false,
                timeoutMs: Math.max(180_000, (WARM / R) * 4_000),
              });
              if (warm.counts.created !== WARM)
                throw new Error(`${k} workers: warm-up created ${warm.counts.created} of ${WARM}`);
              await whenIdle(workers);
            }
            const started = workers.map((w) => w.cpuSeconds());
            const startedMain = workers.map((w) => w.mainThreadCpuSeconds());
            const redis0 = await redisCounters(redis.url);
            const rec = sandbox.record(200);
            const summary = await syncRun('companies', env, {
              withWorker: false,
              timeoutMs: Math.max(180_000, (ROWS / R) * 4_000),
            });
            const samples = await rec.stop();
            const redis1 = await redisCounters(redis.url);
            const ended = workers.map((w) => w.cpuSeconds());
            const endedMain = workers.map((w) => w.mainThreadCpuSeconds());
            if (summary.counts.created !== ROWS)
              throw new Error(`${k} workers: created ${summary.counts.created} of ${ROWS}`);
            const phase = writePhase(samples);
            const totals = minus(samples[samples.length - 1]!, samples[0]!);
            const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
            results.push({
              k,
              steadyRate: phase.steadyRate,
              overallRate: phase.overallRate,
              rateLimited: totals.rateLimited,
              requests: totals.requests,
              wallMs: summary.wallMs,
              runCpuS: sum(ended) - sum(started),
              runMainCpuS: sum(endedMain) - sum(startedMain),
              startCpuS: sum(started),
              redisCpuS: redis1.cpuS - redis0.cpuS,
              redisCalls: redis1.calls - redis0.calls,
              redisScripts: redis1.scripts - redis0.scripts,
            });
            process.stderr.write(
              `sync-scale ${k} workers, run ${run + 1}: CPU ${(sum(ended) - sum(started)).toFixed(2)} s (start-up ${sum(started).toFixed(2)} s), steady ${ratio(phase.steadyRate / R)} R, load ${await loadAverage()}\n`,
            );
          } finally {
            await Promise.all(workers.map((w) => w.stop()));
            await sandbox.close();
          }
        }
      }
    } finally {
      jobs.remove();
      await redis.close();
    }
    const one = medianBy(
      results.filter((r) => r.k === WORKERS[0]),
      (r) => r.runCpuS,
    );
    const rows = WORKERS.map((k) => {
      const rs = results.filter((r) => r.k === k);
      const m = medianBy(rs, (r) => r.runCpuS);
      return [
        k,
        int(m.steadyRate),
        ratio(m.steadyRate / R),
        int(m.overallRate),
        ratio(m.overallRate / R),
        int(m.rateLimited),
        percent(m.rateLimited / m.requests),
        seconds(m.wallMs),
        rs.map((r) => r.runCpuS.toFixed(2)).join(', '),
        rs.map((r) => (r.runCpuS - r.runMainCpuS).toFixed(2)).join(', '),
        ((m.runCpuS * 1000) / ROWS).toFixed(3),
        ratio(m.runCpuS / one.runCpuS),
        m.startCpuS.toFixed(2),
        m.redisCpuS.toFixed(1),
        (m.redisCalls / ROWS).toFixed(1),
        (m.redisScripts / ROWS).toFixed(2),
      ];
    });
    const load1 = await loadAverage();
    return [
      {
        title: `Scale-out: first sync of ${int(ROWS)} companies, R = ${R} req/s (sandbox and PLATFORM_RATE_LIMIT), L = ${LATENCY_MS} ms`,
        columns: [
          'worker processes',
          'steady writes/s',
          'steady / R',
          'overall writes/s',
          'overall / R',
          '429s',
          '429 share',
          'wall (enqueue to end)',
          'workers CPU-s, run (each run)',
          'of it, not the main threads (each run)',
          'workers CPU ms per write, run',
          `CPU over ${WORKERS[0]} worker(s) (median)`,
          'workers CPU-s, start-up',
          'redis CPU-s',
          'Redis commands per write',
          'script calls per write',
        ],
        rows,
        notes: [
          'Workers are `node dist/cli.js worker` with OPS_PORT=0 and PLATFORM_LATENCY_HINT_MS = L; the run is enqueued by `crm-sync run companies --wait --json` once every worker has started and gone idle, and planned by whichever worker takes it.',
          'Rates are successful POSTs per second as the sandbox counted them, sampled every 200 ms; "steady" is 10% to 90% of the writes.',
          "Workers CPU, run: from idle after start-up to the run's end (planning, writes, verification, and the idle workers' own polling), summed over the workers; start-up apart. Redis commands are the sum of INFO commandstats (commands inside Lua scripts counted); script calls are the EVALSHAs (claims, settles and pacer bookings batch writes into them).",
          `${RUNS} run(s) of each count, the counts taking turns; the median run by the workers' CPU.`,
          ...(WARM > 0
            ? [
                `Warm: the workers synced ${int(WARM)} other companies first; their CPU counts from idle after that.`,
              ]
            : []),
          'Target (issue 6.4): the aggregate rate within 5% of R (steady / R between 0.95 and 1.05), whatever the number of workers.',
          `Load average (1 min) before → after: ${load0} → ${load1}, on 2 shared cores.`,
        ],
      },
    ];
  },
};

export default scenario;
