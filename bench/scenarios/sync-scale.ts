/**
 * Issue 6.4: scale-out. 1, 2 and 3 `crm-sync worker` processes on one Redis
 * (private redis-server) against one platform limit R: the sandbox allows R
 * requests/s and every worker is configured PLATFORM_RATE_LIMIT = R (the
 * limit is global, in Redis). A first sync of generated HubSpot companies is
 * enqueued with `crm-sync run JOB --wait --json`; the aggregate write rate
 * the platform saw over the steady part (10% to 90% of the writes) is
 * compared with R, and the 429s counted.
 *
 * BENCH_SCALE_ROWS sets the export size (default 6,000: 30 s of writes at R).
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
} from '../lib/cli.js';
import { ensureSyncExport } from '../lib/exports.js';
import { int, loadAverage, percent, ratio, seconds } from '../lib/measure.js';
import { BENCH_API_KEY, minus, startMeteredSandbox, writePhase } from '../lib/meter.js';

const R = 200;
const LATENCY_MS = 50;
const ROWS = Number(process.env.BENCH_SCALE_ROWS ?? 6_000);
const WORKERS = [1, 2, 3];

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
    const rows: (string | number)[][] = [];
    try {
      for (const k of WORKERS) {
        const sandbox = await startMeteredSandbox({ rateLimit: R, latencyMs: LATENCY_MS });
        const env = cliEnv({
          redisUrl: redis.url,
          prefix: redis.prefix(`scale-${k}`),
          baseUrl: sandbox.url,
          apiKey: BENCH_API_KEY,
          rateLimit: R,
          jobs: jobs.dir,
        });
        const workers = Array.from({ length: k }, () => startWorker(env));
        try {
          const redis0 = await redisCounters(redis.url);
          const rec = sandbox.record(200);
          const summary = await syncRun('companies', env, {
            withWorker: false,
            timeoutMs: Math.max(180_000, (ROWS / R) * 4_000),
          });
          const samples = await rec.stop();
          const redis1 = await redisCounters(redis.url);
          if (summary.counts.created !== ROWS)
            throw new Error(`${k} workers: created ${summary.counts.created} of ${ROWS}`);
          const phase = writePhase(samples);
          const totals = minus(samples[samples.length - 1]!, samples[0]!);
          const workerCpu = workers.reduce((s, w) => s + w.cpuSeconds(), 0);
          rows.push([
            k,
            int(phase.steadyRate),
            ratio(phase.steadyRate / R),
            int(phase.overallRate),
            ratio(phase.overallRate / R),
            int(totals.rateLimited),
            percent(totals.rateLimited / totals.requests),
            seconds(summary.wallMs),
            workerCpu.toFixed(1),
            ((workerCpu * 1000) / ROWS).toFixed(2),
            (redis1.cpuS - redis0.cpuS).toFixed(1),
            ((redis1.calls - redis0.calls) / ROWS).toFixed(1),
          ]);
        } finally {
          await Promise.all(workers.map((w) => w.stop()));
          await sandbox.close();
        }
      }
    } finally {
      jobs.remove();
      await redis.close();
    }
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
          'workers CPU-s (sum)',
          'workers CPU ms per write',
          'redis CPU-s',
          'Redis commands per write',
        ],
        rows,
        notes: [
          'Workers are `node dist/cli.js worker` with OPS_PORT=0; the run is enqueued by `crm-sync run companies --wait --json` and planned by whichever worker takes it.',
          'Rates are successful POSTs per second as the sandbox counted them, sampled every 200 ms; "steady" is 10% to 90% of the writes.',
          'Per write: the whole run (planning, writes, verification) over the rows; Redis commands are the sum of INFO commandstats (commands inside Lua scripts counted).',
          'Target (issue 6.4): the aggregate rate within 5% of R (steady / R between 0.95 and 1.05), whatever the number of workers.',
          `Load average (1 min) before → after: ${load0} → ${load1}, on 2 shared cores.`,
        ],
      },
    ];
  },
};

export default scenario;
