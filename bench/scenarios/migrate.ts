/**
 * `crm-sync migrate` from layout 1 on a large state: 100,000 company record
 * states of three parts (as the previous release wrote them, over 50 runs of
 * two jobs) on a private redis-server. Times the migration, a second
 * migration (state already current: one read of the layout record) and the
 * 1→2 step run again over migrated state (every bucket read, nothing
 * written), with the Redis CPU each took. Median of 3 fresh states.
 */
import { Redis } from 'ioredis';
import type { BenchTable, Scenario } from '../run.js';
import { KeyLayout } from '../../src/state/keys.js';
import { migrateRecordJobs } from '../../src/state/migrate-record-jobs.js';
import { migrate } from '../../src/state/migrations.js';
import { removeDir, startRedisServer } from '../../test/harness/redis-server.js';
import { redisCpuMs } from '../lib/measure.js';

const N = 100_000;
const RUNS = 50;
const PASSES = 3;
const PREFIX = '{crm-sync}';
const noWorkers = async (): Promise<{ names: string[]; unknown: boolean }> => ({
  names: [],
  unknown: false,
});

/** The state layout 1 leaves: meta version 1, run numbers, run records, three-part values. */
async function writeLayout1(redis: Redis, keys: KeyLayout): Promise<void> {
  await redis.flushall();
  const p = redis.pipeline();
  p.hset(keys.meta(), { version: '1', idBuckets: '8192', recBuckets: '4096' });
  for (let r = 1; r <= RUNS; r++) {
    const id = `run-${r}`;
    p.hset(keys.runIds(), `r:${id}`, r, `s:${r}`, id);
    p.hset(keys.run(id), {
      job: r % 2 === 0 ? 'hubspot-companies' : 'salesforce-accounts',
      entity: 'companies',
      mode: 'upsert',
      source: 'bench',
      options: '{}',
      status: 'completed',
      createdAt: String(1_700_000_000_000 + r),
    });
    p.zadd(keys.runsAll(), 1_700_000_000_000 + r, id);
  }
  p.hset(keys.runIds(), 'n', RUNS);
  await p.exec();
  for (let start = 1; start <= N; start += 5000) {
    const q = redis.pipeline();
    for (let id = start; id < start + 5000 && id <= N; id++) {
      const value = `${id.toString(36).padStart(22, 'x')}.${(1_700_000_000_000 + id).toString(36)}.${((id % RUNS) + 1).toString(36)}`;
      q.hset(keys.recs('companies', keys.recBucketOf(id)), String(id), value);
    }
    await q.exec();
  }
}

async function timed<T>(redis: Redis, f: () => Promise<T>): Promise<[T, number, number]> {
  const cpu = await redisCpuMs(redis);
  const t = performance.now();
  const out = await f();
  return [out, performance.now() - t, (await redisCpuMs(redis)) - cpu];
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

const scenario: Scenario = {
  name: 'migrate',
  description: `crm-sync migrate from layout 1: ${N.toLocaleString('en-US')} three-part record states`,
  async run(): Promise<BenchTable[]> {
    const server = await startRedisServer();
    const redis = new Redis(server.url, { maxRetriesPerRequest: null });
    const keys = new KeyLayout(PREFIX);
    const rows: Record<string, { wall: number[]; cpu: number[] }> = {};
    const add = (name: string, wall: number, cpu: number): void => {
      rows[name] ??= { wall: [], cpu: [] };
      rows[name].wall.push(wall);
      rows[name].cpu.push(cpu);
    };
    try {
      for (let pass = 0; pass < PASSES; pass++) {
        await writeLayout1(redis, keys);
        const opts = { prefix: PREFIX, otherWorkers: noWorkers };
        const [first, w1, c1] = await timed(redis, () => migrate(redis, opts));
        const counts = first.steps[0]?.counts;
        if (first.outcome !== 'migrated' || counts?.rewritten !== N) {
          throw new Error(`migration did not rewrite every record: ${JSON.stringify(first)}`);
        }
        add('migrate (1 → 2)', w1, c1);
        const [again, w2, c2] = await timed(redis, () => migrate(redis, opts));
        if (again.outcome !== 'current') throw new Error(`second migrate: ${again.outcome}`);
        add('migrate again (already 2)', w2, c2);
        const [step, w3, c3] = await timed(redis, () =>
          migrateRecordJobs(redis, keys, { batch: 256 }),
        );
        if (step.rewritten !== 0) throw new Error(`step rewrote ${step.rewritten} again`);
        add('step 1 → 2 over migrated state', w3, c3);
      }
      return [
        {
          title: `Migration of ${N.toLocaleString('en-US')} company record states (median of ${PASSES})`,
          columns: ['what', 'wall ms', 'records / s (wall)', 'Redis CPU ms'],
          rows: Object.entries(rows).map(([name, r]) => {
            const wall = median(r.wall);
            return [
              name,
              Math.round(wall),
              name.startsWith('migrate again') ? '—' : Math.round(N / (wall / 1000)),
              Math.round(median(r.cpu)),
            ];
          }),
          notes: [
            `${RUNS} runs of two jobs wrote the records; 4096 record buckets read 256 per round trip; private redis-server ${(await redis.info('server')).match(/redis_version:(\S+)/)?.[1]}`,
          ],
        },
      ];
    } finally {
      await redis.quit();
      await server.stop();
      removeDir(server.dir);
    }
  },
};

export default scenario;
