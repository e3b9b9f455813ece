import { join } from 'node:path';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { createWriteQueue, QueueName } from '../../src/queue/queues.js';
import { otherWorkers, WORKER_NAME } from '../../src/queue/worker-layout.js';
import { KeyLayout, type Buckets } from '../../src/state/keys.js';
import { migrateRecordJobs } from '../../src/state/migrate-record-jobs.js';
import { abandonRuns, migrate, MigrationRefused } from '../../src/state/migrations.js';
import { unpackRecord } from '../../src/state/packing.js';
import { StateStore } from '../../src/state/store.js';
import { countWrites, statsSince, useEngines, type EngineHarness } from '../harness/engine.js';
import {
  LAYOUT1_DIR,
  loadLayout1,
  readLayout1,
  recreateCompanies,
} from '../harness/layout-fixture.js';
import { deleteByPrefix, randomPrefix, redisUrl } from '../harness/redis.js';

const engine = useEngines();

/** `crm-sync migrate` as the CLI runs it: the workers of the prefix's queues are listed. */
async function migrateAs(
  redis: Redis | EngineHarness['producer']['redis'],
  prefix: string,
  opts: { abandonRuns?: boolean; buckets?: Buckets } = {},
): ReturnType<typeof migrate> {
  const queues = [
    new Queue(QueueName.runs, { connection: redis, prefix }),
    createWriteQueue({ connection: redis, prefix }) as Queue,
  ];
  try {
    return await migrate(redis, {
      prefix,
      otherWorkers: () => otherWorkers(queues),
      ...opts,
    });
  } finally {
    await Promise.all(queues.map((q) => q.close()));
  }
}

/** Every record state of companies under the prefix, by platform id. */
async function recordStates(
  redis: EngineHarness['producer']['redis'],
  keys: KeyLayout,
): Promise<Map<number, string>> {
  const p = redis.pipeline();
  for (let b = 0; b < keys.buckets.records; b++) p.hgetall(keys.recs('companies', b));
  const out = new Map<number, string>();
  for (const [, h] of (await p.exec())!) {
    for (const [id, v] of Object.entries(h as Record<string, string>)) out.set(Number(id), v);
  }
  return out;
}

describe('state of layout 1, as the previous release left it', () => {
  it('is refused, migrated (a second time changes nothing), and a sync on top writes nothing and keeps every record', async () => {
    const h = await engine({
      deferWorkers: true,
      env: { CRM_SYNC_MAPPINGS_DIR: join(LAYOUT1_DIR, 'mappings') },
    });
    const redis = h.producer.redis;
    const fixture = await loadLayout1(redis, h.prefix);
    await recreateCompanies(h.client(), fixture);
    const keys = new KeyLayout(h.prefix);

    const before = await recordStates(redis, keys);
    expect(before.size).toBe(100);
    for (const v of before.values()) expect(v.split('.')).toHaveLength(3);

    for (const [job, mapping, file] of [
      ['hubspot-companies', 'layout1-hubspot', 'hubspot-companies.csv'],
      ['salesforce-accounts', 'layout1-salesforce', 'salesforce-accounts.csv'],
    ] as const) {
      h.writeJob(job, { entity: 'companies', source: { path: join(LAYOUT1_DIR, file) }, mapping });
    }

    // This release refuses the old layout, naming the command to run: no worker
    // starts, no run is enqueued, nothing is read.
    await expect(h.startWorkers()).rejects.toMatchObject({
      code: 'state.layout-old',
      message: expect.stringContaining('run `crm-sync migrate`'),
    });
    await expect(h.store.records.lookup('companies', [{ keys: ['x:1'] }])).rejects.toMatchObject({
      code: 'state.layout-old',
    });
    await expect(h.enqueue('hubspot-companies')).rejects.toMatchObject({
      code: 'state.layout-old',
    });
    expect(await h.producer.runQueue.count()).toBe(0);

    const report = await migrateAs(redis, h.prefix);
    expect(report).toMatchObject({ outcome: 'migrated', from: 1, to: 2, abandonedRuns: [] });
    expect(report.steps).toEqual([
      expect.objectContaining({
        to: 2,
        counts: { records: 100, rewritten: 100, writerUnknown: 0 },
      }),
    ]);
    expect(await redis.hgetall(keys.meta())).toEqual({
      version: '2',
      idBuckets: '8192',
      recBuckets: '4096',
    });

    // Each record names the job whose run wrote it; everything else is as it was.
    const after = await recordStates(redis, keys);
    const jobOf = await redis.hgetall(keys.jobIds());
    const byId = new Map(fixture.companies.map((c) => [c.id as number, c]));
    expect([...after.keys()].sort()).toEqual([...before.keys()].sort());
    for (const [id, value] of after) {
      const s = unpackRecord(value);
      const old = unpackRecord(before.get(id)!);
      expect({ ...s, jobNumber: undefined }).toEqual({ ...old, jobNumber: undefined });
      const ext = byId.get(id)!.external_id as string;
      expect(jobOf[`s:${s.jobNumber}`]).toBe(
        ext.startsWith('hubspot:') ? 'hubspot-companies' : 'salesforce-accounts',
      );
    }

    // Again: nothing to do, nothing changed; the step itself changes nothing either.
    const snapshot = await h.stateSnapshot();
    expect(await migrateAs(redis, h.prefix)).toMatchObject({ outcome: 'current', steps: [] });
    expect(await migrateRecordJobs(redis, keys, { batch: 64 })).toEqual({
      records: 100,
      rewritten: 0,
      writerUnknown: 0,
    });
    expect(await h.stateSnapshot()).toEqual(snapshot);

    // The jobs that wrote it sync the same exports: nothing to write, every record kept.
    const stats = await h.stats();
    const hub = await h.runJob('hubspot-companies');
    expect(hub.status).toBe('completed');
    expect(hub.counts).toMatchObject({ read: 50, created: 0, updated: 0, unchanged: 50 });
    const sf = await h.runJob('salesforce-accounts');
    expect(sf.status).toBe('completed');
    expect(sf.counts).toMatchObject({ read: 50, created: 0, updated: 0, unchanged: 50 });
    expect(countWrites(statsSince(stats, await h.stats()))).toBe(0);
    const platform = (await h.dump()).companies;
    expect(platform.map((c) => c.id).sort()).toEqual([...byId.keys()].sort());
    const final = await recordStates(redis, keys);
    expect([...final.keys()].sort()).toEqual([...before.keys()].sort());
    for (const v of final.values()) expect(v.split('.')).toHaveLength(4);
  });
});

describe('crm-sync migrate refuses while the older release could still write', () => {
  const open: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const close of open.splice(0).reverse()) await close();
  });
  async function fixturePrefix(): Promise<{ redis: Redis; prefix: string; keys: KeyLayout }> {
    const redis = new Redis(redisUrl(), { maxRetriesPerRequest: null });
    const prefix = randomPrefix();
    open.push(async () => {
      await deleteByPrefix(redis, prefix);
      redis.disconnect();
    });
    await loadLayout1(redis, prefix);
    return { redis, prefix, keys: new KeyLayout(prefix) };
  }
  function worker(redis: Redis, prefix: string, name?: string): Worker {
    const w = new Worker(QueueName.writes, async () => undefined, {
      connection: redis.duplicate(),
      prefix,
      ...(name !== undefined && { name }),
    });
    open.push(() => w.close());
    return w;
  }

  it('a worker of the older release connected: refused, nothing changed; one of this release does not count', async () => {
    const { redis, prefix, keys } = await fixturePrefix();
    // Releases before layout 2 give their workers no name.
    const old = worker(redis, prefix);
    await old.waitUntilReady();
    await worker(redis, prefix, WORKER_NAME).waitUntilReady();
    const err = await migrateAs(redis, prefix).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MigrationRefused);
    expect((err as Error).message).toMatch(
      /1 worker connection\(s\) of another crm-sync release are connected .*stop every worker of the older release/,
    );
    expect(await redis.hget(keys.meta(), 'version')).toBe('1');
    expect(await redis.hexists(keys.meta(), 'migratingFrom')).toBe(0);

    await old.close();
    expect(await migrateAs(redis, prefix)).toMatchObject({ outcome: 'migrated' });
  });

  it('a run the older release started and did not end: refused; --abandon-runs marks it failed and migrates', async () => {
    const { redis, prefix, keys } = await fixturePrefix();
    const [runId] = await redis.zrange(keys.runsAll(), '0', '0');
    await redis.hset(keys.run(runId!), { status: 'writing', phase: 'waiting' });
    // A run already stamped with this layout is no obstacle.
    await redis.hset(keys.run('new-run'), { status: 'planning', layout: '2' });
    await redis.zadd(keys.runsAll(), Date.now(), 'new-run');

    await expect(migrateAs(redis, prefix)).rejects.toThrow(
      new RegExp(
        `1 run\\(s\\) started by the older release have not ended \\(${runId}\\).*--abandon-runs`,
      ),
    );
    expect(await redis.hget(keys.meta(), 'version')).toBe('1');

    const report = await migrateAs(redis, prefix, { abandonRuns: true });
    expect(report).toMatchObject({ outcome: 'migrated', abandonedRuns: [runId] });
    const store = new StateStore(redis, { prefix });
    expect(await store.runs.get(runId!)).toMatchObject({
      status: 'failed',
      error: expect.stringContaining('abandoned by crm-sync migrate'),
    });
    expect(await redis.hget(keys.run('new-run'), 'status')).toBe('planning');
  });

  it('--abandon-runs fails a run only while it is still active: one that ended since it was listed keeps its end', async () => {
    const { redis, keys } = await fixturePrefix();
    const [ended, active] = await redis.zrange(keys.runsAll(), '0', '1');
    // Both were listed as writing; `ended` completed before the abandon reached it.
    await redis.hset(keys.run(ended!), { status: 'completed', finishedAt: '5' });
    await redis.hset(keys.run(active!), { status: 'writing' });
    // One stamped with this layout since it was listed is not the older release's.
    await redis.hset(keys.run('stamped'), { status: 'planning', layout: '2' });

    const done = await abandonRuns(redis, keys, [ended!, active!, 'stamped'], 1_000);
    expect(done).toEqual([active]);
    expect(await redis.hmget(keys.run(ended!), 'status', 'finishedAt', 'error')).toEqual([
      'completed',
      '5',
      null,
    ]);
    expect(await redis.hmget(keys.run(active!), 'status', 'finishedAt')).toEqual([
      'failed',
      '1000',
    ]);
    expect(await redis.hget(keys.run('stamped'), 'status')).toBe('planning');
  });

  it('other bucket counts than the state was made with: refused before any change, also when resuming', async () => {
    const { redis, prefix, keys } = await fixturePrefix();
    const before = await recordStates(redis, keys);
    const other = { ids: 8192, records: 2048 };
    const refused = /recBuckets is 4096, this process uses 2048: nothing was changed/;
    await expect(migrateAs(redis, prefix, { buckets: other })).rejects.toThrow(refused);
    expect(await redis.hgetall(keys.meta())).toEqual({
      version: '1',
      idBuckets: '8192',
      recBuckets: '4096',
    });
    expect(await recordStates(redis, keys)).toEqual(before);
    // A store with those counts is told the same, not to run a migration.
    const store = new StateStore(redis, { prefix, buckets: other });
    await expect(store.layout.assertRead()).rejects.toMatchObject({
      code: 'state.layout-mismatch',
    });

    await redis.hset(keys.meta(), { version: '2', migratingFrom: '1' });
    await expect(migrateAs(redis, prefix, { buckets: other })).rejects.toThrow(refused);
    expect(await recordStates(redis, keys)).toEqual(before);
    expect(await migrateAs(redis, prefix)).toMatchObject({ outcome: 'migrated', from: 1 });
  });

  it('a newer layout is refused (upgrade crm-sync); a migration cut off is refused by the store and finished by migrate', async () => {
    const { redis, prefix, keys } = await fixturePrefix();
    const store = new StateStore(redis, { prefix });

    await redis.hset(keys.meta(), 'version', '3');
    for (const call of [store.layout.assertRead(), migrateAs(redis, prefix)]) {
      await expect(call).rejects.toMatchObject({
        code: 'state.layout-new',
        message: expect.stringContaining('upgrade crm-sync'),
      });
    }
    await expect(
      store.runs.create({ job: 'j', entity: 'companies', mode: 'upsert', source: 's' }),
    ).rejects.toMatchObject({ code: 'state.layout-new' });

    // As if a migration from 1 stopped after marking the layout.
    await redis.hset(keys.meta(), { version: '2', migratingFrom: '1' });
    await expect(store.layout.assertRead()).rejects.toMatchObject({
      code: 'state.layout-migrating',
      message: expect.stringContaining('run it again'),
    });
    const report = await migrateAs(redis, prefix);
    expect(report).toMatchObject({ outcome: 'migrated', from: 1 });
    expect(report.steps[0]?.counts).toMatchObject({ rewritten: 100 });
    await expect(new StateStore(redis, { prefix }).layout.assertRead()).resolves.toBeUndefined();
  });

  it('a record whose run record is gone keeps three parts (writer unknown); a second migrate at once is refused', async () => {
    const { redis, prefix, keys } = await fixturePrefix();
    const runs = await redis.zrange(keys.runsAll(), '0', '-1');
    const gone = [];
    for (const id of runs) {
      if ((await redis.hget(keys.run(id), 'job')) === 'salesforce-accounts') gone.push(id);
    }
    expect(gone).toHaveLength(1);
    await redis.del(keys.run(gone[0]!));

    await redis.set(keys.migrationLock(), 'someone-else', 'PX', 10_000);
    await expect(migrateAs(redis, prefix)).rejects.toThrow(/another crm-sync migrate is running/);
    expect(await redis.hget(keys.meta(), 'version')).toBe('1');
    await redis.del(keys.migrationLock());

    const report = await migrateAs(redis, prefix);
    expect(report.steps[0]?.counts).toEqual({ records: 100, rewritten: 50, writerUnknown: 50 });
    const parts = [...(await recordStates(redis, keys)).values()].map((v) => v.split('.').length);
    expect(parts.filter((n) => n === 3)).toHaveLength(50);
    expect(parts.filter((n) => n === 4)).toHaveLength(50);
    expect(await redis.exists(keys.migrationLock())).toBe(0);
    // Read as before: a record with no known writer is no other job's.
    const fixture = readLayout1();
    const sf = fixture.companies.find((c) => String(c.external_id).startsWith('salesforce:'))!;
    const store = new StateStore(redis, { prefix });
    const [known] = await store.records.lookup(
      'companies',
      [{ keys: [`x:${String(sf.external_id)}`] }],
      {
        job: 'hubspot-companies',
      },
    );
    expect(known).toMatchObject({ platformId: sf.id, storedHash: expect.any(String) });
    expect(known?.writtenBy).toBeUndefined();
    expect(await migrateAs(redis, prefix)).toMatchObject({ outcome: 'current' });
  });

  it('a prefix with no state: nothing to migrate, and its first write records this layout', async () => {
    const redis = new Redis(redisUrl(), { maxRetriesPerRequest: null });
    const prefix = randomPrefix();
    open.push(async () => {
      await deleteByPrefix(redis, prefix);
      redis.disconnect();
    });
    expect(await migrateAs(redis, prefix)).toMatchObject({ outcome: 'none' });
    const store = new StateStore(redis, { prefix });
    await store.records.commit('companies', [
      { keys: ['x:a'], platformId: 7, hash: 'h', runId: 'r', job: 'j' },
    ]);
    expect(await redis.hget(new KeyLayout(prefix).meta(), 'version')).toBe('2');
    expect(await migrateAs(redis, prefix)).toMatchObject({ outcome: 'current' });
  });
});

describe('a run belongs to the layout of the release that started it', () => {
  it('a worker leaves a run of another layout (neither written nor failed) and takes a run of none not yet started', async () => {
    const h = await engine({
      deferWorkers: true,
      env: { CRM_SYNC_MAPPINGS_DIR: join(LAYOUT1_DIR, 'mappings') },
    });
    const redis = h.producer.redis;
    const keys = new KeyLayout(h.prefix);
    h.writeJob('hubspot-companies', {
      entity: 'companies',
      source: { path: join(LAYOUT1_DIR, 'hubspot-companies.csv') },
      mapping: 'layout1-hubspot',
    });
    const runId = await h.enqueue('hubspot-companies');
    expect(await redis.hget(keys.run(runId), 'layout')).toBe('2');
    // As if a release of layout 3 had started it.
    await redis.hset(keys.run(runId), 'layout', '3');
    await h.startWorkers();
    const job = (await h.producer.runQueue.getJob(runId))!;
    const deadline = Date.now() + 10_000;
    while ((await job.getState()) !== 'delayed') {
      if (Date.now() > deadline) throw new Error(`run job is ${await job.getState()}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect((await h.store.runs.get(runId))?.status).toBe('queued');
    expect(countWrites(await h.stats())).toBe(0);

    // With no layout and not started (a scheduler of an older release made it): taken and stamped.
    await redis.hdel(keys.run(runId), 'layout');
    await job.promote();
    const run = await h.waitForRun(runId);
    expect(run).toMatchObject({ status: 'completed', counts: { created: 50 } });
    expect(await redis.hget(keys.run(runId), 'layout')).toBe('2');
  });
});
