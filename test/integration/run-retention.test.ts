import { describe, expect, it } from 'vitest';
import { QueueName, runJobOptions, workerOptions } from '../../src/queue/queues.js';
import { Numbering } from '../../src/state/numbering.js';
import { DEFAULT_RUN_HISTORY } from '../../src/defaults.js';
import { RunRetention } from '../../src/state/run-retention.js';
import { StateStore } from '../../src/state/store.js';
import { captureLogger } from '../harness/log-capture.js';
import { keysMatching, randomPrefix, useRedis } from '../harness/redis.js';

const { redis } = useRedis();
const base = { entity: 'companies', mode: 'upsert', source: '/data/accounts.csv' } as const;

/** Every key under `prefix` (this test's own prefix on the test Redis). */
function keysOf(prefix: string): Promise<string[]> {
  return keysMatching(redis, `${prefix}*`);
}

/** A store keeping `keep` runs per job, on a prefix of its own (each test deletes its keys). */
function storeOf(keep: number, now: () => number) {
  const prefix = randomPrefix();
  const store = new StateStore(redis, { prefix, runHistory: keep, now });
  const numbers = new Numbering(redis, store.keys.runIds(), 'run');
  return { prefix, store, numbers };
}

/** A run of `job` that goes the whole way: numbered, failure rows, left progress, ended. */
async function fullRun(
  s: ReturnType<typeof storeOf>,
  job: string,
  id: string,
  status: 'completed' | 'failed' | 'writing' = 'completed',
): Promise<void> {
  await s.store.runs.create({ ...base, id, job });
  await s.numbers.numberOf(id);
  await s.store.runs.addFailures(id, [{ line: 2, kind: 'invalid', reason: 'no name' }]);
  // A run that fails while writing leaves its settled lines behind.
  await redis.sadd(s.store.keys.settled(id), '2');
  await s.store.runs.update(id, { status });
}

async function cleanUp(prefix: string): Promise<void> {
  const keys = await keysOf(prefix);
  if (keys.length > 0) await redis.unlink(...keys);
}

describe('run retention', () => {
  it('keeps the newest runs of each job and forgets the older ones whole', async () => {
    let clock = 1_700_000_000_000;
    const s = storeOf(3, () => clock);
    try {
      for (let i = 1; i <= 6; i++) {
        clock += 1000;
        await fullRun(s, 'accounts', `run-a${i}`);
      }
      clock += 1000;
      await fullRun(s, 'members', 'run-b1');

      const kept = await s.store.runs.list({ job: 'accounts', limit: 100 });
      expect(kept.map((r) => r.id)).toEqual(['run-a6', 'run-a5', 'run-a4']);
      expect((await s.store.runs.list({ limit: 100 })).map((r) => r.id)).toEqual([
        'run-b1',
        'run-a6',
        'run-a5',
        'run-a4',
      ]);
      for (const gone of ['run-a1', 'run-a2', 'run-a3']) {
        expect(await s.store.runs.get(gone)).toBeNull();
        expect(await redis.exists(s.store.keys.failures(gone), s.store.keys.settled(gone))).toBe(0);
        expect(await redis.hexists(s.store.keys.runIds(), `r:${gone}`)).toBe(0);
      }
      // The numbers of the runs forgotten are gone with them; the counter is not reused.
      const ids = await redis.hgetall(s.store.keys.runIds());
      expect(Object.keys(ids).sort()).toEqual(
        ['n', 'r:run-a4', 'r:run-a5', 'r:run-a6', 'r:run-b1', 's:4', 's:5', 's:6', 's:7'].sort(),
      );
      expect(await s.store.runs.countFailures('run-a4')).toBe(1);
    } finally {
      await cleanUp(s.prefix);
    }
  });

  it('holds the key count flat however many runs follow', async () => {
    let clock = 1_700_000_000_000;
    const s = storeOf(5, () => clock);
    try {
      const counts: number[] = [];
      for (let i = 1; i <= 60; i++) {
        clock += 1000;
        await fullRun(s, 'accounts', `run-${String(i).padStart(3, '0')}`);
        if (i % 10 === 0) counts.push((await keysOf(s.prefix)).length);
      }
      // 5 runs kept, each a record, failure rows and progress; plus the lists and numbers.
      expect(new Set(counts).size).toBe(1);
      expect(await redis.zcard(s.store.keys.runsAll())).toBe(5);
      expect(await redis.hlen(s.store.keys.runIds())).toBe(1 + 2 * 5);
    } finally {
      await cleanUp(s.prefix);
    }
  });

  it('never forgets a run that has not ended, however old', async () => {
    let clock = 1_700_000_000_000;
    const s = storeOf(2, () => clock);
    try {
      clock += 1000;
      await fullRun(s, 'accounts', 'run-waiting', 'writing');
      for (let i = 1; i <= 4; i++) {
        clock += 1000;
        await fullRun(s, 'accounts', `run-${i}`, i === 2 ? 'failed' : 'completed');
      }
      const kept = (await s.store.runs.list({ job: 'accounts', limit: 100 })).map((r) => r.id);
      expect(kept).toEqual(['run-4', 'run-3', 'run-waiting']);
      // Once it ends, the next run forgets it.
      await s.store.runs.update('run-waiting', { status: 'failed' });
      clock += 1000;
      await fullRun(s, 'accounts', 'run-5');
      expect((await s.store.runs.list({ job: 'accounts', limit: 100 })).map((r) => r.id)).toEqual([
        'run-5',
        'run-4',
      ]);
    } finally {
      await cleanUp(s.prefix);
    }
  });

  it('creates the run even when forgetting old ones fails, and says so at warn', async () => {
    const { logger, lines } = captureLogger('warn');
    const prefix = randomPrefix();
    const store = new StateStore(redis, { prefix, runHistory: 1, logger });
    try {
      await store.runs.create({ ...base, id: 'run-1', job: 'accounts' });
      await store.runs.update('run-1', { status: 'completed' });
      // The run numbers are not a hash: forgetting run-1 fails once the new run exists.
      await redis.set(store.keys.runIds(), 'not a hash');
      await expect(store.runs.create({ ...base, id: 'run-2', job: 'accounts' })).resolves.toBe(
        'run-2',
      );
      expect(await store.runs.get('run-2')).toMatchObject({ status: 'queued', job: 'accounts' });
      expect(lines).toEqual([
        expect.objectContaining({ level: 'warn', job: 'accounts', runId: 'run-2' }),
      ]);
      // The next run prunes again.
      await redis.unlink(store.keys.runIds());
      await store.runs.update('run-2', { status: 'completed' });
      await store.runs.create({ ...base, id: 'run-3', job: 'accounts' });
      expect((await store.runs.list({ job: 'accounts' })).map((r) => r.id)).toEqual(['run-3']);
      expect(lines).toHaveLength(1);
    } finally {
      await cleanUp(prefix);
    }
  });

  it('keeps 1,000 runs per job by default and refuses a bound below one', () => {
    expect(DEFAULT_RUN_HISTORY).toBe(1_000);
    const keys = new StateStore(redis, { prefix: randomPrefix() }).keys;
    expect(() => new RunRetention(redis, keys, 0)).toThrow(RangeError);
  });

  it('has the run queue keep as many finished runs as the setting', () => {
    const opts = runJobOptions(7);
    expect(opts.removeOnComplete).toMatchObject({ count: 7 });
    expect(opts.removeOnFail).toMatchObject({ count: 7 });
    const worker = workerOptions(QueueName.runs, { connection: redis, keepRuns: 7 });
    expect(worker.removeOnComplete).toMatchObject({ count: 7 });
    expect(runJobOptions().removeOnComplete).toMatchObject({ count: 1_000 });
  });

  it('caches the numbers of the most recent runs only, in a long-lived process', async () => {
    const prefix = randomPrefix();
    const key = `${prefix}:runs:ids`;
    try {
      const numbers = new Numbering(redis, key, 'run', 3);
      const given: number[] = [];
      for (let i = 1; i <= 10; i++) given.push(await numbers.numberOf(`run-${i}`));
      expect(numbers.cachedCount).toBe(3);
      expect(numbers.cached('run-1')).toBeUndefined();
      expect(numbers.cached('run-10')).toBe(given[9]);
      // A number no longer cached is read again, unchanged.
      expect(await numbers.numberOf('run-1')).toBe(given[0]);
      expect(await numbers.namesOf([given[1]!, given[9]!])).toEqual(['run-2', 'run-10']);
      expect(numbers.cachedCount).toBe(3);
    } finally {
      await redis.unlink(key);
    }
  });
});
