/**
 * The cost of one platform write, steady state, with ONE `crm-sync worker`
 * process on a private redis-server, the run enqueued with
 * `crm-sync run JOB --wait --json` (the worker plans it too):
 *
 * - "cost": 5,000 companies, the sandbox at 5,000 requests/s and no latency,
 *   so the worker is the bottleneck: its CPU per write and the Redis
 *   commands per write are the whole cost of a write.
 * - "1,000/s": 20,000 companies at R = 1,000/s, L = 20 ms: the rate one
 *   worker reaches on this machine, sandbox included, against R.
 *
 * Every 200 ms the bench samples the successful writes the sandbox counted,
 * the worker's CPU (/proc) and the commands redis-server has run (the sum of
 * `calls` in INFO commandstats, which counts the commands a Lua script runs
 * as well as the script call); figures are over the steady part, 10% to 90%
 * of the writes.
 *
 * BENCH_COST_ROWS and BENCH_COST_RATE_ROWS shrink the two cases;
 * BENCH_COST_CASES=cost (or 1000) runs one of them only; BENCH_COST_RUNS=N
 * runs each case N times, the cases taking turns, and shows the median run.
 */
import { Redis } from 'ioredis';
import type { BenchTable, Scenario, ShortForm } from '../run.js';
import {
  cliEnv,
  jobsDir,
  openBenchRedis,
  type BenchRedis,
  processCpuSeconds,
  requireBuild,
  startWorker,
  syncRun,
} from '../lib/cli.js';
import { describeTime, startCommandClock, type CommandTime } from '../lib/command-time.js';
import { ensureSyncExport } from '../lib/exports.js';
import { int, loadAverage, medianBy, percent, ratio } from '../lib/measure.js';
import { BENCH_API_KEY, startMeteredSandbox } from '../lib/meter.js';
import { sleep } from '../../src/sleep.js';

const COST_ROWS = Number(process.env.BENCH_COST_ROWS ?? 5_000);
const RATE_ROWS = Number(process.env.BENCH_COST_RATE_ROWS ?? 20_000);

interface Case {
  label: string;
  rows: number;
  rate: number;
  latencyMs: number;
}

/** Runs of each case (BENCH_COST_RUNS, default 1); the table shows the median one by CPU per write. */
const RUNS = Math.max(1, Number(process.env.BENCH_COST_RUNS ?? 1));

const ONLY = process.env.BENCH_COST_CASES?.split(',').map((s) => s.trim());

const CASES: Case[] = [
  { label: 'cost', rows: COST_ROWS, rate: 5_000, latencyMs: 0 },
  { label: '1,000/s', rows: RATE_ROWS, rate: 1_000, latencyMs: 20 },
].filter((c) => !ONLY || ONLY.includes(c.label === 'cost' ? 'cost' : String(c.rate)));

/** Targets of the write cost. */
const TARGET = { cpuMsPerWrite: 0.5, commandsPerWrite: 20, rateShare: 0.9 };

interface Point {
  t: number;
  writes: number;
  rateLimited: number;
  cpuS: number;
  /** redis-server's CPU seconds (INFO cpu). */
  redisCpuS: number;
  commands: number;
  byCommand: Map<string, number>;
}

interface Steady {
  rate: number;
  cpuMsPerWrite: number;
  commandsPerWrite: number;
  /** redis-server's CPU per write (µs), steady part: what one primary spends on a write. */
  redisUsPerWrite: number;
  /** The same over the whole write phase: from the last sample before the first write to the end. */
  phaseCpuMsPerWrite: number;
  phaseCommandsPerWrite: number;
  writes: number;
  rateLimited: number;
  workerCpuS: number;
  /** Commands per write by name over the steady part (the nearest samples), most first. */
  profile: [string, number][];
  /** Redis time per call over the whole run (planning and finalize included). */
  time: CommandTime | undefined;
}

/** Commands redis-server has run by name, those inside scripts included; and its CPU seconds. */
async function commandCalls(redis: Redis): Promise<{ calls: Map<string, number>; cpuS: number }> {
  const info = String(await redis.call('INFO', 'cpu', 'commandstats'));
  const calls = new Map<string, number>();
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls.set(m[1]!, Number(m[2]));
  const cpu = (name: string): number =>
    Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1]);
  return { calls, cpuS: cpu('used_cpu_user') + cpu('used_cpu_sys') };
}

const sum = (m: Map<string, number>): number => [...m.values()].reduce((a, b) => a + b, 0);

/** The point where the writes first reached `count`, interpolated between samples. */
function at(points: readonly Point[], count: number): Point {
  for (let i = 1; i < points.length; i++) {
    const a = points[i - 1]!;
    const b = points[i]!;
    if (b.writes >= count) {
      const f = b.writes === a.writes ? 1 : (count - a.writes) / (b.writes - a.writes);
      const mix = (x: number, y: number): number => x + f * (y - x);
      return {
        t: mix(a.t, b.t),
        writes: count,
        rateLimited: mix(a.rateLimited, b.rateLimited),
        cpuS: mix(a.cpuS, b.cpuS),
        redisCpuS: mix(a.redisCpuS, b.redisCpuS),
        commands: mix(a.commands, b.commands),
        byCommand: f < 0.5 ? a.byCommand : b.byCommand,
      };
    }
  }
  throw new Error(`the writes never reached ${count}`);
}

function steadyOf(points: readonly Point[], time: CommandTime | undefined): Steady {
  const first = points[0]!;
  const last = points[points.length - 1]!;
  const writes = last.writes - first.writes;
  const p10 = at(points, first.writes + 0.1 * writes);
  const p90 = at(points, first.writes + 0.9 * writes);
  const n = p90.writes - p10.writes;
  const start = points.filter((p) => p.writes === first.writes).pop()!;
  return {
    rate: n / ((p90.t - p10.t) / 1000),
    cpuMsPerWrite: ((p90.cpuS - p10.cpuS) * 1000) / n,
    commandsPerWrite: (p90.commands - p10.commands) / n,
    redisUsPerWrite: ((p90.redisCpuS - p10.redisCpuS) * 1e6) / n,
    phaseCpuMsPerWrite: ((last.cpuS - start.cpuS) * 1000) / writes,
    phaseCommandsPerWrite: (last.commands - start.commands) / writes,
    writes,
    rateLimited: last.rateLimited - first.rateLimited,
    workerCpuS: last.cpuS - first.cpuS,
    profile: [...p90.byCommand]
      .map(([name, calls]): [string, number] => [
        name,
        (calls - (p10.byCommand.get(name) ?? 0)) / n,
      ])
      .filter(([, perWrite]) => perWrite >= 0.05)
      .sort((a, b) => b[1] - a[1]),
    time,
  };
}

async function runCase(c: Case, server: BenchRedis, prefix: string): Promise<Steady> {
  const redisUrl = server.url;
  const path = await ensureSyncExport(c.rows, false);
  const jobs = jobsDir();
  jobs.write('companies', path);
  const sandbox = await startMeteredSandbox({ rateLimit: c.rate, latencyMs: c.latencyMs });
  const env = cliEnv({
    redisUrl,
    prefix,
    baseUrl: sandbox.url,
    apiKey: BENCH_API_KEY,
    rateLimit: c.rate,
    jobs: jobs.dir,
  });
  const clock = await startCommandClock(redisUrl, server.shared);
  const worker = startWorker(env);
  const redis = new Redis(redisUrl);
  const points: Point[] = [];
  let going = true;
  const t0 = performance.now();
  const sampler = (async () => {
    while (going) {
      const [totals, redisNow] = await Promise.all([sandbox.totals(), commandCalls(redis)]);
      points.push({
        t: performance.now() - t0,
        writes: totals.writes,
        rateLimited: totals.rateLimited,
        cpuS: processCpuSeconds(worker.child.pid),
        redisCpuS: redisNow.cpuS,
        commands: sum(redisNow.calls),
        byCommand: redisNow.calls,
      });
      await sleep(200);
    }
  })();
  try {
    const summary = await syncRun('companies', env, {
      withWorker: false,
      timeoutMs: Math.max(180_000, (c.rows / c.rate) * 8_000),
    });
    if (summary.counts.created !== c.rows) {
      throw new Error(`${c.label}: created ${summary.counts.created} of ${c.rows}`);
    }
    going = false;
    await sampler;
    return steadyOf(points, await clock.read());
  } finally {
    going = false;
    await sampler.catch(() => undefined);
    redis.disconnect();
    await worker.stop();
    await sandbox.close();
    jobs.remove();
  }
}

/**
 * Each case `runs` times on one Redis, the cases taking turns (so that each
 * sees the machine's changing load alike); per case its median run by worker
 * CPU per write (of an even count, the costlier middle one) and all its runs.
 */
async function measureCases(
  cases: readonly Case[],
  runs: number,
): Promise<Map<Case, { median: Steady; all: Steady[] }>> {
  const server = await openBenchRedis();
  try {
    const all = new Map<Case, Steady[]>(cases.map((c) => [c, []]));
    for (let n = 0; n < runs; n++)
      for (const c of cases)
        all.get(c)!.push(await runCase(c, server, server.prefix(`cost-${c.rate}-${n}`)));
    return new Map(
      cases.map((c) => [
        c,
        { median: medianBy(all.get(c)!, (r) => r.cpuMsPerWrite), all: all.get(c)! },
      ]),
    );
  } finally {
    await server.close();
  }
}

/**
 * The check's short form: the cost case as it is (5,000 companies) and the
 * 1,000/s case with 10,000, each three times; the median runs' figures.
 */
export const shortForm: ShortForm = {
  what: '5,000 companies at 5,000/s, 10,000 at 1,000/s, median of 3 runs each',
  async measure() {
    requireBuild();
    const cost: Case = { label: 'cost', rows: 5_000, rate: 5_000, latencyMs: 0 };
    const at1000: Case = { label: '1,000/s', rows: 10_000, rate: 1_000, latencyMs: 20 };
    const measured = await measureCases([cost, at1000], 3);
    const c = measured.get(cost)!.median;
    const r = measured.get(at1000)!.median;
    return {
      'cost.cpuMsPerWrite': c.cpuMsPerWrite,
      'cost.commandsPerWrite': c.commandsPerWrite,
      'cost.redisUsPerWrite': c.redisUsPerWrite,
      '1000.cpuMsPerWrite': r.cpuMsPerWrite,
      '1000.commandsPerWrite': r.commandsPerWrite,
      '1000.steadyShareOfRate': r.rate / at1000.rate,
    };
  },
};

const scenario: Scenario = {
  name: 'sync-cost',
  description: `worker CPU and Redis commands per write, one worker: ${int(COST_ROWS)} companies at 5,000/s and L = 0; ${int(RATE_ROWS)} at R = 1,000/s, L = 20 ms`,
  async run(): Promise<BenchTable[]> {
    requireBuild();
    const load0 = await loadAverage();
    const rows: (string | number)[][] = [];
    const profiles: string[] = [];
    const times: string[] = [];
    const measured = await measureCases(CASES, RUNS);
    for (const c of CASES) {
      const { median: s, all } = measured.get(c)!;
      times.push(`Redis time per script call, ${c.label} (whole run): ${describeTime(s.time)}.`);
      profiles.push(
        `Redis commands per write, ${c.label} (steady part): ${s.profile
          .map(([name, perWrite]) => `${name} ${perWrite.toFixed(2)}`)
          .join(', ')}.`,
      );
      rows.push([
        `${int(c.rows)} companies, R = ${int(c.rate)}/s, L = ${c.latencyMs} ms`,
        int(s.rate),
        ratio(s.rate / c.rate),
        s.cpuMsPerWrite.toFixed(3),
        ratio(s.cpuMsPerWrite / TARGET.cpuMsPerWrite),
        RUNS > 1
          ? all.map((r) => `${r.cpuMsPerWrite.toFixed(3)} (${ratio(r.rate / c.rate)})`).join(', ')
          : '-',
        s.commandsPerWrite.toFixed(1),
        ratio(s.commandsPerWrite / TARGET.commandsPerWrite),
        s.redisUsPerWrite.toFixed(1),
        int(1e6 / s.redisUsPerWrite),
        s.phaseCpuMsPerWrite.toFixed(3),
        s.phaseCommandsPerWrite.toFixed(1),
        int(s.rateLimited),
        percent(s.rateLimited / Math.max(1, s.writes + s.rateLimited)),
        s.workerCpuS.toFixed(1),
      ]);
    }
    const load1 = await loadAverage();
    return [
      {
        title: 'Cost of a write, one worker process, steady state (10% to 90% of the writes)',
        columns: [
          'case',
          'steady writes/s',
          'steady / R',
          'worker CPU ms per write',
          'CPU / target (0.5 ms)',
          'CPU ms per write (steady / R) of each run, in order',
          'Redis commands per write',
          'commands / target (20)',
          'redis-server CPU µs per write',
          'writes per redis-server CPU-s',
          'CPU ms per write, write phase',
          'commands per write, write phase',
          '429s',
          '429 share',
          'worker CPU-s (whole run)',
        ],
        rows,
        notes: [
          `Runs per case: ${RUNS} (BENCH_COST_RUNS), the cases taking turns; every column but "of each run" is the median run by worker CPU per write (of an even count, the costlier middle one).`,
          '"Write phase" is from the last sample before the first write to the end of the run (the claims of the first writes and the verification included; planning not).',
          "Worker CPU from /proc of the `crm-sync worker` process; Redis commands are the sum of `calls` in INFO commandstats (commands run by Lua scripts included), the sampler's own INFO calls among them (one per 200 ms).",
          `Targets: at most ${TARGET.cpuMsPerWrite} ms of worker CPU and ${TARGET.commandsPerWrite} Redis commands per write; at R = 1,000/s, steady / R at least ${TARGET.rateShare}.`,
          'redis-server CPU per write: INFO cpu (user + sys) over the steady part, BullMQ and the pacer included; its inverse is the writes one primary could take per second of its one thread, were nothing else asked of it.',
          ...profiles,
          ...times,
          `Load average (1 min) before → after: ${load0} → ${load1}, on 2 shared cores.`,
        ],
      },
    ];
  },
};

export default scenario;
