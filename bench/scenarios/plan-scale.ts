/**
 * Issue 6.3: planning throughput and peak RSS at 10k, 100k and 1M rows. For
 * each size the generated HubSpot companies CSV is first synced into state
 * directly (every record committed with the hash a plan computes, as after a
 * first sync), then a child process (`bench/lib/plan-child.ts`) runs one
 * planning pass with a Redis sink against a private redis-server: every row
 * is read, mapped, validated, identified, hashed, claimed, looked up and
 * found unchanged, which is a nightly run with nothing to write. Redis bytes
 * per synced record come from the state-memory scenario (not measured twice).
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import type { BenchTable, Scenario, ShortForm } from '../run.js';
import { ensureData } from '../crm-data.js';
import { openBenchRedis, redisCounters, ROOT, type BenchRedis } from '../lib/cli.js';
import { describeTime, startCommandClock, type CommandTime } from '../lib/command-time.js';
import { benchRules, PLAN_RUN_ID } from '../lib/plan-pass.js';
import { int, loadAverage, median, medianBy, ratio, seconds } from '../lib/measure.js';
import { loadMapping } from '../../src/crm/presets.js';
import { readRows } from '../../src/crm/read.js';
import { PLANNING_BATCH_ROWS } from '../../src/engine/plan-pass.js';
import type { CommitEntry } from '../../src/state/records.js';
import { StateStore } from '../../src/state/store.js';
import { contentHash } from '../../src/sync/hash.js';
import { identityKeys } from '../../src/sync/identity.js';

/** Export sizes planned, one child each; BENCH_PLAN_SIZES (e.g. `1000000`) picks others. */
const SIZES = (process.env.BENCH_PLAN_SIZES ?? '10000,100000,1000000').split(',').map(Number);
/**
 * Planning passes per size (BENCH_PLAN_RUNS, default 1), each in a new child
 * against the same loaded state, the run's scratch cleared between them: the
 * table shows the median pass (by wall time) and every pass's rows/s.
 */
const RUNS = Math.max(1, Number(process.env.BENCH_PLAN_RUNS ?? 1));
/**
 * Survivor rules planned (BENCH_DUPLICATES, e.g. `none,newest`; default
 * none): each round of passes runs one pass per rule, in turn, against the
 * same loaded state, so that the rules meet the same load. One table row
 * per size and rule.
 */
const RULES = benchRules(process.env.BENCH_DUPLICATES);
/** Rows per batch (BENCH_PLAN_BATCH), handed to each child; the planner's default when unset. */
const BATCH = Number(process.env.BENCH_PLAN_BATCH || PLANNING_BATCH_ROWS);
/** Planning rows per second (wall) the issue asks for. */
const TARGET = 50_000;

const run = promisify(execFile);

interface ChildResult {
  counts: { read: number; unchanged: number; create: number; update: number };
  wallMs: number;
  cpuMs: number;
  maxRssKb: number;
  /** The committed V8 heap at the highest RSS the child sampled. */
  heapAtPeakKb: number;
}

/** Commits every row of the export into state, as a first sync would leave it. */
async function syncIntoState(store: StateStore, path: string): Promise<number> {
  const mapping = loadMapping('hubspot-companies');
  let n = 0;
  let inFlight: Promise<void>[] = [];
  for await (const batch of readRows({ path }, { batchSize: 1000 })) {
    const entries: CommitEntry[] = [];
    for (const row of batch) {
      const r = mapping.map(row);
      if (!r.ok) throw new Error(`line ${r.line}: ${r.field}: ${r.reason}`);
      const body = r.body as Record<string, unknown>;
      entries.push({
        keys: identityKeys('companies', body),
        platformId: ++n,
        hash: contentHash(body, mapping.fingerprint),
        runId: 'bench-first-sync',
        job: 'bench',
      });
    }
    // A few commits in flight keep Redis busy without holding the export.
    inFlight.push(store.records.commit('companies', entries));
    if (inFlight.length >= 4) {
      await Promise.all(inFlight);
      inFlight = [];
    }
  }
  await Promise.all(inFlight);
  return n;
}

async function planInChild(
  path: string,
  url: string,
  prefix: string,
  batch: number,
  rule: string,
): Promise<ChildResult> {
  const { stdout } = await run(
    process.execPath,
    [
      '--import',
      'tsx',
      join(ROOT, 'bench', 'lib', 'plan-child.ts'),
      path,
      url,
      prefix,
      String(batch),
    ],
    {
      cwd: ROOT,
      maxBuffer: 1 << 20,
      timeout: 600_000,
      env: { ...process.env, BENCH_DUPLICATES: rule },
    },
  );
  return JSON.parse(stdout.trim().split('\n').pop()!) as ChildResult;
}

interface Pass {
  r: ChildResult;
  redisCpu: number;
  calls: number;
  scratch: number;
  time: CommandTime | undefined;
}

interface SizeResult {
  size: number;
  rule: string;
  synced: number;
  loadMs: number;
  passes: Pass[];
  /** The median pass by wall time (of an even count, the slower middle one). */
  median: Pass;
  rssKb: number;
  heapKb: number;
}

/**
 * Loads `size` rows into state under a fresh prefix, then plans them `runs`
 * times under each survivor rule, the rules in turn in each round, each pass
 * in a new child (the run's scratch cleared between them). One result per rule.
 */
async function measureSize(
  server: BenchRedis,
  redis: Redis,
  size: number,
  runs: number,
  batch: number,
  rules: string[] = ['none'],
): Promise<SizeResult[]> {
  const path = await ensureData('csv', size);
  const prefix = server.prefix(`plan-${size}`);
  const store = new StateStore(redis, { prefix });
  const t0 = performance.now();
  const synced = await syncIntoState(store, path);
  const loadMs = performance.now() - t0;
  const passes = new Map<string, Pass[]>(rules.map((rule) => [rule, []]));
  let first = true;
  for (let n = 0; n < runs; n++) {
    for (const rule of rules) {
      if (!first) await store.progress.clear(PLAN_RUN_ID);
      first = false;
      const clock = await startCommandClock(server.url, server.shared);
      const redis0 = await redisCounters(server.url);
      const r = await planInChild(path, server.url, prefix, batch, rule);
      const redis1 = await redisCounters(server.url);
      if (r.counts.read !== size || r.counts.unchanged !== size)
        throw new Error(
          `plan of ${size} rows (${rule}): read ${r.counts.read}, unchanged ${r.counts.unchanged}`,
        );
      passes.get(rule)!.push({
        r,
        redisCpu: redis1.cpuS - redis0.cpuS,
        calls: redis1.calls - redis0.calls,
        // What the pass leaves in Redis until the run ends: its seen ids, mostly.
        scratch: redis1.usedMemory - redis0.usedMemory,
        time: await clock.read(),
      });
    }
  }
  return rules.map((rule) => {
    const ofRule = passes.get(rule)!;
    return {
      size,
      rule,
      synced,
      loadMs,
      passes: ofRule,
      median: medianBy(ofRule, (p) => p.r.wallMs),
      rssKb: median(ofRule.map((p) => p.r.maxRssKb)),
      heapKb: median(ofRule.map((p) => p.r.heapAtPeakKb)),
    };
  });
}

/** The check's short form: 200,000 unchanged rows, the median of three passes. */
export const shortForm: ShortForm = {
  what: '200,000 unchanged rows, median of 3 passes',
  async measure() {
    const size = 200_000;
    const server = await openBenchRedis();
    const redis = new Redis(server.url, { maxRetriesPerRequest: 1 });
    try {
      const { median: m } = (await measureSize(server, redis, size, 3, PLANNING_BATCH_ROWS))[0]!;
      return {
        rowsPerSecond: size / (m.r.wallMs / 1000),
        redisRowsPerCpuSecond: size / m.redisCpu,
      };
    } finally {
      redis.disconnect();
      await server.close();
    }
  },
};

const scenario: Scenario = {
  name: 'plan-scale',
  description: `planning pass with the Redis sink (every row unchanged) and peak RSS at ${SIZES.map((s) => s.toLocaleString('en-US')).join(', ')} rows, one child process per pass (${RUNS} per size and survivor rule: ${RULES.join(', ')})`,
  async run(): Promise<BenchTable[]> {
    // Checked here, not on import: every scenario module is imported, whichever runs.
    if (!Number.isInteger(BATCH) || BATCH < 1)
      throw new Error(
        `BENCH_PLAN_BATCH: ${process.env.BENCH_PLAN_BATCH} is not a whole number of rows above 0`,
      );
    const load0 = await loadAverage();
    const server = await openBenchRedis();
    const redis = new Redis(server.url, { maxRetriesPerRequest: 1 });
    const rows: (string | number)[][] = [];
    // Peak RSS of the first size, per rule (the "peak vs" column's base).
    const firstRss = new Map<string, number>();
    try {
      for (const size of SIZES) {
        for (const s of await measureSize(server, redis, size, RUNS, BATCH, RULES)) {
          const { r, redisCpu, calls, scratch, time } = s.median;
          if (!firstRss.has(s.rule)) firstRss.set(s.rule, s.rssKb);
          rows.push([
            int(size),
            s.rule,
            int(size / (r.wallMs / 1000)),
            ratio(size / (r.wallMs / 1000) / TARGET),
            RUNS > 1 ? s.passes.map((p) => int(size / (p.r.wallMs / 1000))).join(', ') : '-',
            int(size / (r.cpuMs / 1000)),
            int(size / redisCpu),
            (calls / size).toFixed(1),
            describeTime(time),
            `${(scratch / size).toFixed(1)} B`,
            seconds(r.wallMs),
            `${(s.rssKb / 1024).toFixed(0)} MiB`,
            `${(s.heapKb / 1024).toFixed(0)} MiB`,
            ratio(s.rssKb / firstRss.get(s.rule)!),
            `${int(s.synced)} in ${seconds(s.loadMs)}`,
          ]);
        }
      }
    } finally {
      redis.disconnect();
      await server.close();
    }
    const load1 = await loadAverage();
    return [
      {
        title:
          'Planning pass (read, map, validate, identify, hash, claim, look up), all rows unchanged',
        columns: [
          'rows',
          'survivor rule',
          'rows/s (wall)',
          `vs ${int(TARGET)}/s`,
          'rows/s of each pass, in order',
          'rows per CPU-s of the planner',
          'rows per CPU-s of redis-server',
          'Redis commands per row',
          'Redis time per script call',
          'run scratch left in Redis per row',
          'wall',
          'peak RSS',
          'V8 heap at the peak',
          'peak vs 10k',
          'state loaded first (not timed in the plan)',
        ],
        rows,
        notes: [
          `Survivor rule: none (every shared identity a conflict), or duplicates: {keep: <rule>, by: Create Date} (BENCH_DUPLICATES, a comma list); the generated rows share no identity, so every row keeps its claims.`,
          `Passes per size and rule: ${RUNS} (BENCH_PLAN_RUNS), each in a new child against the same loaded state, the rules in turn in each round, the run's scratch cleared between passes; every column but "rows/s of each pass" is the median pass by wall time (of an even count, the slower middle one), peak RSS the median of the passes.`,
          `Each plan runs in its own \`node --import tsx\` child (tsx adds about 30 MiB to every peak: see docs/BENCHMARKS.md, plan-scale); peak from process.resourceUsage().maxRSS, and the V8 heap committed (process.memoryUsage().heapTotal) at the highest RSS sampled every 50 ms, both medians of the passes; batches of ${BATCH} rows (BENCH_PLAN_BATCH); redis-server is private.`,
          'The planner maps and hashes a batch while the ones before it are with Redis (up to BATCHES_UNDER_WAY of them under way: the lookup of each, record states included, and its claims, then its planned writes and seen ids), so wall-clock rows/s also depends on redis-server getting CPU; rows per CPU-second of the planner is the child process alone, of redis-server from its INFO cpu around the child.',
          'Redis commands per row: the sum of INFO commandstats around the child (commands run by Lua scripts counted, as in the sync tables).',
          "Redis time per script call: the pass's own INFO commandstats (EVALSHA and EVAL: mean) and INFO latencystats (99.9th percentile of script calls; the longest call of any command), statistics reset before the child: how long one planning pass holds the server, call by call (a private redis-server only).",
          "Run scratch left in Redis per row: used_memory after the child less before it, over the rows: what the pass keeps until the run ends (the platform ids it saw, for the orphan report; its claims are freed at the pass's end).",
          'Redis bytes per synced record: see the state-memory section (131 bytes per company: identity map + record state).',
          `Load average (1 min) before → after: ${load0} → ${load1}, on 2 shared cores.`,
        ],
      },
    ];
  },
};

export default scenario;
