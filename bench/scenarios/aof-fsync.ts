/**
 * What `appendfsync always` costs our write path against `everysec`: the
 * Redis side of a create (the pending claim before the request, the commit
 * of its identity keys and record state after the answer, as the write
 * worker sends them: store.writes.claim, store.writes.finish) on private
 * redis-servers with AOF on, one per setting, on this machine's disk. Sent
 * one create at a time (the latency a single write sees) and 32 at once
 * (Redis fsyncs once per event-loop pass under `always`, so concurrent
 * writers share fsyncs). The settings alternate within each repeat, so
 * their ratio is measured under the same machine noise.
 */
import { Redis } from 'ioredis';
import type { BenchTable, Scenario } from '../run.js';
import { removeDir, startRedisServer, type RedisServer } from '../../test/harness/redis-server.js';
import { StateStore } from '../../src/state/store.js';

const SEQUENTIAL = 400;
const CONCURRENT = 4_000;
const IN_FLIGHT = 32;
const REPEATS = 5;
const MODES = ['everysec', 'always'] as const;
type Mode = (typeof MODES)[number];

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/**
 * One create's Redis round trips, as the write worker makes them: the claim
 * (run still taking writes, line not settled, identity keys marked pending;
 * one script) and the finish (identity keys mapped to the new record, its
 * state stored, pending cleared, the line settled; one script). The worker
 * finishes the writes that ended meanwhile in one call; here each create
 * finishes alone, the dearer case.
 */
async function create(store: StateStore, n: number, runId: string): Promise<void> {
  const keys = [`x:bench:${runId}:${n}`, `c:${runId}-${n}`];
  const claim = await store.writes.claim({ runId, entity: 'companies', line: n, createKeys: keys });
  if (claim !== 'go') throw new Error(`claim of ${keys[0]} answered ${claim}`);
  await store.writes.finish(runId, 'companies', [
    {
      line: n,
      outcome: 'created',
      keys,
      clearPending: true,
      commit: { platformId: n + 1, hash: 'h'.repeat(22), job: 'bench' },
    },
  ]);
}

/** Creates per second with `inFlight` creates going at once. */
async function rate(
  store: StateStore,
  total: number,
  inFlight: number,
  runId: string,
): Promise<number> {
  await store.runs.create({
    id: runId,
    job: 'bench',
    entity: 'companies',
    mode: 'upsert',
    source: 'bench',
  });
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      for (let n = next++; n < total; n = next++) await create(store, n, runId);
    }),
  );
  return total / ((performance.now() - started) / 1_000);
}

interface Sample {
  sequential: number;
  concurrent: number;
}

const scenario: Scenario = {
  name: 'aof-fsync',
  description:
    "a create's Redis round trips (pending claim, commit) under AOF appendfsync everysec and always",
  async run(): Promise<BenchTable[]> {
    const servers = new Map<Mode, RedisServer>();
    const clients: Redis[] = [];
    const samples = new Map<Mode, Sample[]>(MODES.map((m) => [m, []]));
    try {
      const stores = new Map<Mode, StateStore>();
      for (const mode of MODES) {
        const server = await startRedisServer({ appendonly: true, appendfsync: mode });
        servers.set(mode, server);
        const redis = new Redis(server.url, { maxRetriesPerRequest: null });
        clients.push(redis);
        const reply = (await redis.config('GET', 'appendfsync')) as string[];
        if (reply[1] !== mode) throw new Error(`redis-server runs appendfsync ${reply[1]}`);
        stores.set(mode, new StateStore(redis));
      }
      for (let r = 0; r < REPEATS; r++) {
        for (const mode of MODES) {
          const store = stores.get(mode)!;
          samples.get(mode)!.push({
            sequential: await rate(store, SEQUENTIAL, 1, `run-s${r}`),
            concurrent: await rate(store, CONCURRENT, IN_FLIGHT, `run-c${r}`),
          });
        }
      }
    } finally {
      for (const c of clients) c.disconnect();
      for (const s of servers.values()) {
        await s.stop();
        removeDir(s.dir);
      }
    }
    const med = (mode: Mode, k: keyof Sample) => median(samples.get(mode)!.map((s) => s[k]));
    const row = (label: string, k: keyof Sample) => {
      const [every, always] = [med('everysec', k), med('always', k)];
      return [
        label,
        Math.round(every).toLocaleString('en-US'),
        Math.round(always).toLocaleString('en-US'),
        (always / every).toFixed(2),
        `${(1_000 / every).toFixed(2)} / ${(1_000 / always).toFixed(2)}`,
        MODES.map((m) =>
          samples
            .get(m)!
            .map((s) => Math.round(s[k]))
            .join(', '),
        ).join('; '),
      ];
    };
    return [
      {
        title: `Creates per second, Redis side only (median of ${REPEATS}; the settings alternate within each repeat)`,
        columns: [
          'creates in flight',
          'everysec (creates/s)',
          'always (creates/s)',
          'always / everysec',
          'ms per create (everysec / always)',
          'runs (everysec; always)',
        ],
        rows: [
          row(`1 (${SEQUENTIAL} creates)`, 'sequential'),
          row(`${IN_FLIGHT} (${CONCURRENT.toLocaleString('en-US')} creates)`, 'concurrent'),
        ],
        notes: [
          "a create = the write worker's claim (identity keys marked pending) + finish (identity keys, record state, pending cleared, line settled), one script each: the two Redis round trips of a create that must be durable; each create finishes alone (the worker batches finishes that end together)",
          'private redis-servers with appendonly yes, their data on the disk of tmpdir(); the platform request between claim and commit is left out',
        ],
      },
    ];
  },
};

export default scenario;
