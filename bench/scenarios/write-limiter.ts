/**
 * The shared request pacer: turns per second handed out by two pacers (two
 * worker replicas) sharing one Redis, against the configured rate, each with
 * as many callers as `writeConcurrency` gives and 50 ms per request; the
 * most turns in any sliding second (what a DRF platform counts); and the
 * Redis commands each turn cost (INFO: script calls from commandstats; all
 * commands, those the script runs included, from total_commands_processed).
 */
import { Redis } from 'ioredis';
import type { Scenario } from '../run.js';
import { startRedisServer, removeDir } from '../../test/harness/redis-server.js';
import { closeRedis, createRedis } from '../../src/redis/connection.js';
import { writeConcurrency } from '../../src/queue/limiter.js';
import { fixedPace, RedisPacer } from '../../src/queue/pacer.js';

const LATENCY_MS = 50;
const SECONDS = 4;
const REPEATS = 3;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Commands processed (those a script runs included), and script calls (EVALSHA, EVAL). */
async function commands(redis: Redis): Promise<{ all: number; scripts: number }> {
  const stats = await redis.info('stats');
  const cmd = await redis.info('commandstats');
  const calls = (name: string) =>
    Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(cmd)?.[1] ?? 0);
  return {
    all: Number(/total_commands_processed:(\d+)/.exec(stats)?.[1] ?? 0),
    scripts: calls('evalsha') + calls('eval'),
  };
}

async function measure(url: string, rate: number, concurrency: number, run: number) {
  const prefix = `{bench-pacer-${rate}-${concurrency}-${run}}`;
  const admin = new Redis(url);
  const connections = [createRedis('worker', url), createRedis('worker', url)];
  const pacers = connections.map(
    (redis) => new RedisPacer({ redis, prefix, mode: { kind: 'fixed', rate } }),
  );
  for (const p of pacers) await p.start();
  const before = await commands(admin);
  const turns: number[] = [];
  const until = performance.now() + SECONDS * 1_000;
  await Promise.all(
    pacers.flatMap((p) =>
      Array.from({ length: concurrency }, async () => {
        while (performance.now() < until) {
          await p.acquire();
          turns.push(performance.now());
          await sleep(LATENCY_MS);
        }
      }),
    ),
  );
  const after = await commands(admin);
  // The two INFO calls of `before` are counted in `after`.
  const used = { all: after.all - before.all - 2, scripts: after.scripts - before.scripts };
  for (const p of pacers) p.stop();
  for (const c of connections) await closeRedis(c);
  await admin.quit();
  turns.sort((a, b) => a - b);
  const t0 = turns[0]!;
  let worst = 0;
  for (let i = 0, j = 0; i < turns.length; i++) {
    while (j < turns.length && turns[j]! < turns[i]! + 1_000) j++;
    worst = Math.max(worst, j - i);
  }
  return {
    rate: turns.filter((t) => t - t0 < SECONDS * 1_000).length / SECONDS,
    worst,
    perTurn: used.all / turns.length,
    scriptsPerTurn: used.scripts / turns.length,
  };
}

const scenario: Scenario = {
  name: 'write-limiter',
  description: `turns/s from two pacers sharing one Redis, ${LATENCY_MS} ms per request`,
  async run() {
    const server = await startRedisServer();
    const rows: (string | number)[][] = [];
    try {
      const cases = [20, 50, 100].map((rate) => ({
        rate,
        concurrency: writeConcurrency({ rateLimit: rate, latencyMs: LATENCY_MS }),
      }));
      cases.push({ rate: 100, concurrency: 1 });
      for (const c of cases) {
        const runs = [];
        for (let i = 0; i < REPEATS; i++)
          runs.push(await measure(server.url, c.rate, c.concurrency, i));
        const m = median(runs.map((r) => r.rate));
        rows.push([
          c.rate,
          fixedPace(c.rate).toFixed(1),
          c.concurrency,
          m.toFixed(1),
          (m / c.rate).toFixed(3),
          Math.max(...runs.map((r) => r.worst)),
          median(runs.map((r) => r.scriptsPerTurn)).toFixed(2),
          median(runs.map((r) => r.perTurn)).toFixed(2),
          runs.map((r) => r.rate.toFixed(1)).join(', '),
        ]);
      }
    } finally {
      await server.stop();
      removeDir(server.dir);
    }
    return [
      {
        title: 'Shared request pacer (median of 3)',
        columns: [
          'PLATFORM_RATE_LIMIT',
          'paced at',
          'callers per replica',
          'measured (turns/s)',
          'ratio to limit',
          'most in any 1 s',
          'script calls per turn',
          'Redis commands per turn (those in the script included)',
          'runs',
        ],
        rows,
        notes: [
          'callers from writeConcurrency(rate, latency) unless given; the last row shows 2 replicas × 1 in flight cannot reach 100/s at 50 ms (at most 40/s)',
          `measured: turns within the first ${SECONDS} s from the first, divided by ${SECONDS}; "most in any 1 s" over every run`,
        ],
      },
    ];
  },
};

export default scenario;
