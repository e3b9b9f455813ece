/**
 * What deleting a run's scratch costs, whatever the run's size: its 16,384
 * claim buckets and 4,096 seen buckets are named by the worker and unlinked
 * 1,024 a command (src/state/progress.ts, identity-claims.ts) when a
 * planning pass cut off starts over (`resetPlanning`, in MULTI), when
 * planning ends (the claims' release) and at the run's end (`clear`: the
 * seen buckets, and the claim buckets only where no release unlinked them).
 * On a private redis-server, BENCH_SCRATCH_CALLS (default 20) rounds of the
 * three steps in a run's order on one run id, none of the buckets existing
 * (the cost is the naming); and of the release of a 100-row pass this process
 * planned, which names only the buckets the pass claimed into
 * (src/state/claimed-buckets.ts; the claims made first, untimed).
 * Figures, medians: this process's CPU and wall time, the longest the event
 * loop was held (a 1 ms timer's worst delay: in a worker, how late the other
 * runs' paced writes go out meanwhile), and redis-server's CPU over the
 * step (INFO cpu).
 */
import { Redis } from 'ioredis';
import type { BenchTable, Scenario } from '../run.js';
import { StateStore } from '../../src/state/store.js';
import { median, redisCpuMs, stepCost } from '../lib/measure.js';
import { removeDir, startRedisServer } from '../../test/harness/redis-server.js';

const CALLS = Number(process.env.BENCH_SCRATCH_CALLS ?? 20);

const STEPS = {
  'planning reset (a pass cut off)': (s: StateStore, run: string) => s.progress.resetPlanning(run),
  'claims released (planning ends), a pass planned elsewhere': (s: StateStore, run: string) =>
    s.claims.release(run),
  "cleared (the run's end)": (s: StateStore, run: string) => s.progress.clear(run),
  'claims released, a 100-row pass planned here': (s: StateStore, run: string) =>
    s.claims.release(`${run}-here`),
};

/** The rows a pass of this process claims before the last step (two identity keys each). */
const PASS_ROWS = 100;

/** The claims of a 100-row pass, made here before its release is timed. */
async function claimPass(store: StateStore, run: string): Promise<void> {
  await store.claims.claim(
    `${run}-here`,
    Array.from({ length: PASS_ROWS }, (_, n) => ({
      line: n + 2,
      keys: [`x:${run}:${n}`, `y:${run}:${n}`],
    })),
  );
}

interface Sample {
  cpuMs: number;
  wallMs: number;
  heldMs: number;
  redisMs: number;
}

async function sample(redis: Redis, fn: () => Promise<void>): Promise<Sample> {
  const redis0 = await redisCpuMs(redis);
  const { cpuMs, wallMs, heldMs } = await stepCost(fn);
  return { cpuMs, wallMs, heldMs, redisMs: (await redisCpuMs(redis)) - redis0 };
}

const scenario: Scenario = {
  name: 'scratch',
  description: "deleting a run's scratch buckets (reset, release, end)",
  async run(): Promise<BenchTable[]> {
    const server = await startRedisServer();
    const redis = new Redis(server.url, { maxRetriesPerRequest: null });
    const store = new StateStore(redis);
    const cases = Object.entries(STEPS).map(([name, fn]) => ({
      name,
      fn,
      samples: [] as Sample[],
    }));
    try {
      for (let i = 0; i < CALLS; i++) {
        await claimPass(store, `bench-${i}`);
        for (const c of cases) c.samples.push(await sample(redis, () => c.fn(store, `bench-${i}`)));
        await store.progress.clear(`bench-${i}-here`);
      }
    } finally {
      await redis.quit();
      await server.stop();
      removeDir(server.dir);
    }
    const ms = (xs: number[]) => median(xs).toFixed(1);
    return [
      {
        title: `A run's scratch deleted, ${CALLS} calls of each step (medians)`,
        columns: [
          'step',
          'CPU ms',
          'wall ms',
          'event loop held, longest ms',
          'redis-server CPU ms',
        ],
        rows: cases.map((c) => [
          c.name,
          ms(c.samples.map((x) => x.cpuMs)),
          ms(c.samples.map((x) => x.wallMs)),
          ms(c.samples.map((x) => x.heldMs)),
          ms(c.samples.map((x) => x.redisMs)),
        ]),
        notes: [
          'names: the reset 20,480 buckets and a few keys, the release 16,384, the end after it 4,096 and a few keys; the release of a pass planned here the buckets its claims went to (about 200 for 100 rows of two keys)',
          'CPU: this process (the worker side); redis-server CPU: INFO cpu before and after, its INFO included',
        ],
      },
    ];
  },
};

export default scenario;
