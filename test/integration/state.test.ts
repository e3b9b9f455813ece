import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { contentHash } from '../../src/sync/hash.js';
import { identityKeys } from '../../src/sync/identity.js';
import { planBatch } from '../../src/sync/plan.js';
import { hashTag } from '../../src/redis/target.js';
import type { PlatformRecord } from '../../src/state/platform-index.js';
import {
  ORPHAN_SCAN_BUCKETS,
  ORPHAN_SCAN_RECORDS,
  type OrphanScan,
} from '../../src/state/records.js';
import { StateStore } from '../../src/state/store.js';
import { keysMatching, useRedis } from '../harness/redis.js';

const { redis, prefix } = useRedis();

/**
 * The client as the store sees it, counting round trips: one per direct
 * command (a Lua script's included), one per pipeline or transaction
 * executed.
 */
function counting(client: Redis): { client: Redis; trips: () => number; reset: () => void } {
  let trips = 0;
  const proxy = new Proxy(client, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function') return value;
      // Defining a Lua script as a command of the client sends nothing.
      if (prop === 'defineCommand') return (value as (...a: unknown[]) => unknown).bind(target);
      if (prop === 'pipeline' || prop === 'multi') {
        return (...args: unknown[]) => {
          const p = (value as (...a: unknown[]) => { exec: () => Promise<unknown> }).apply(
            target,
            args,
          );
          const exec = p.exec.bind(p);
          p.exec = () => {
            trips++;
            return exec();
          };
          return p;
        };
      }
      return (...args: unknown[]) => {
        trips++;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { client: proxy, trips: () => trips, reset: () => (trips = 0) };
}

async function* pages<T>(items: T[], size: number, failAfter?: number): AsyncGenerator<T[]> {
  for (let i = 0; i < items.length; i += size) {
    if (failAfter !== undefined && i >= failAfter) throw new Error('listing broke off');
    yield items.slice(i, i + size);
  }
}

const company = (n: number): Record<string, unknown> => ({
  external_id: `E${n}`,
  crm_account_id: `A${n}`,
  crm_company_id: 100_000 + n,
  name: `Company ${n}`,
  website: `https://c${n}.example`,
});

describe('StateStore: record state', () => {
  it('looks up 1,000 records in a handful of round trips, and commits in three', async () => {
    const c = counting(redis);
    const store = new StateStore(c.client, { prefix: `${prefix}:batch` });
    const rows = Array.from({ length: 1000 }, (_, n) => company(n));
    const records = rows.map((b) => ({ keys: identityKeys('companies', b) }));
    // A lookup writes nothing, not even the layout record (a dry run relies on it).
    await store.records.lookup('companies', records.slice(0, 1));
    expect(await redis.keys(`${prefix}:batch*`)).toEqual([]);
    await store.records.commit('companies', []); // records the layout, once per process
    c.reset();
    const known = await store.records.lookup('companies', records);
    expect(known).toHaveLength(1000);
    expect(known.every((k) => k.platformId === undefined)).toBe(true);
    // Nothing matched and no index: the identity map read is all it takes.
    expect(c.trips()).toBe(1);

    c.reset();
    await store.records.commit(
      'companies',
      records.map((r, n) => ({
        keys: r.keys,
        platformId: n + 1,
        hash: `h${n}`,
        runId: 'run-1',
        job: 'j',
      })),
    );
    // Numbering the run and the job (once per process each), the transaction, the record count.
    expect(c.trips()).toBe(4);

    c.reset();
    const again = await store.records.lookup('companies', records);
    // Each record's state is read in the same script as the identity map.
    expect(c.trips()).toBe(1);
    expect(again[0]).toEqual({ platformId: 1, storedHash: 'h0', matchedBy: records[0]!.keys[0] });
    expect(again[999]).toEqual({
      platformId: 1000,
      storedHash: 'h999',
      matchedBy: records[999]!.keys[0],
    });
    expect(await store.records.info('companies')).toMatchObject({ records: 1000 });

    // With an index, half the records known to state and half to the listing only: three.
    const listed = Array.from({ length: 1000 }, (_, n) => ({ id: 5000 + n, ...company(1000 + n) }));
    await store.index.replace('companies', pages(listed, 100));
    const mixed = [
      ...records.slice(0, 500),
      ...listed.slice(0, 500).map((r) => ({ keys: identityKeys('companies', r) })),
    ];
    c.reset();
    const both = await store.records.lookup('companies', mixed);
    expect(c.trips()).toBe(3);
    expect(both[0]).toMatchObject({ platformId: 1, storedHash: 'h0' });
    expect(both[500]).toMatchObject({ platformId: 5000, remote: company(1000) });
  });

  it('matches by the first identity key that maps to a platform id, in priority order', async () => {
    const store = new StateStore(redis, { prefix: `${prefix}:prio` });
    expect(await store.records.info('companies')).toBeNull();
    await store.records.commit('companies', [
      { keys: ['a:A1'], platformId: 11, hash: 'h11', runId: 'r', job: 'j' },
      { keys: ['x:E2'], platformId: 22, hash: 'h22', runId: 'r', job: 'j' },
    ]);
    const [byAccount, byExternal, none] = await store.records.lookup('companies', [
      { keys: ['x:E9', 'a:A1'] },
      { keys: ['x:E2', 'a:A1'] },
      { keys: ['x:E3'] },
    ]);
    expect(byAccount).toEqual({ platformId: 11, storedHash: 'h11', matchedBy: 'a:A1' });
    expect(byExternal).toEqual({ platformId: 22, storedHash: 'h22', matchedBy: 'x:E2' });
    expect(none).toEqual({});
    expect(await store.records.info('companies')).toMatchObject({ records: 2 });
  });

  it('keeps pending creates until verified, and a commit clears them', async () => {
    const store = new StateStore(redis, { prefix: `${prefix}:pending`, now: () => 1234 });
    for (const id of ['run-7', 'run-8']) {
      await store.runs.create({ id, job: 'j', entity: 'members', mode: 'upsert', source: 'u.csv' });
      await store.runs.update(id, { status: 'writing', phase: 'waiting' });
    }
    // The claim before a create marks it pending under every identity key.
    const createKeys = ['x:U1', 'e:ann@example.com'];
    await store.writes.claim({ runId: 'run-7', entity: 'members', line: 2, createKeys });
    expect(await store.records.pending('members', ['e:ann@example.com'])).toEqual({
      runId: 'run-7',
      since: 1234,
    });
    expect(await store.records.pending('members', ['x:U2'])).toBeNull();
    const [k] = await store.records.lookup('members', [{ keys: ['x:U1'] }]);
    expect(k).toEqual({ pending: { runId: 'run-7', since: 1234 } });
    expect(await store.records.listPending('members')).toHaveLength(2);

    await store.records.commit('members', [
      { keys: ['x:U1', 'e:ann@example.com'], platformId: 5, hash: 'h', runId: 'run-7', job: 'j' },
    ]);
    expect(await store.records.pending('members', ['x:U1', 'e:ann@example.com'])).toBeNull();
    await store.writes.claim({ runId: 'run-8', entity: 'members', line: 2, createKeys: ['x:U3'] });
    expect(await store.records.listPending('members')).toHaveLength(1);
    await store.records.clearPending('members', ['x:U3']);
    expect(await store.records.listPending('members')).toEqual([]);
  });

  it('looks up keys of any script and length, each pending create under its own key', async () => {
    const store = new StateStore(redis, { prefix: `${prefix}:bytes`, now: () => 99 });
    await store.runs.create({
      id: 'run-u',
      job: 'j',
      entity: 'members',
      mode: 'upsert',
      source: 's',
    });
    await store.runs.update('run-u', { status: 'writing', phase: 'waiting' });
    // The lookup sends every key in one argument, each by its length in bytes, not characters.
    const long = `x:${'é'.repeat(70_000)}`;
    await store.records.commit('members', [
      {
        keys: ['x:Zürich-1', 'e:jürgen@beispiel.de'],
        platformId: 8,
        hash: 'h8',
        runId: 'r',
        job: 'j',
      },
      { keys: [long], platformId: 9, hash: 'h9', runId: 'r', job: 'j' },
    ]);
    await store.writes.claim({
      runId: 'run-u',
      entity: 'members',
      line: 4,
      createKeys: ['x:東京-3', 'e:ünal@beispiel.de'],
    });
    const known = await store.records.lookup('members', [
      { keys: ['x:東京-3', 'e:ünal@beispiel.de'] },
      { keys: ['x:Zürich-9', 'e:jürgen@beispiel.de'] },
      { keys: [long, 'e:😀@beispiel.de'] },
      { keys: ['x:Zürich-1'] },
    ]);
    expect(known).toEqual([
      { pending: { runId: 'run-u', since: 99 } },
      { platformId: 8, storedHash: 'h8', matchedBy: 'e:jürgen@beispiel.de' },
      { platformId: 9, storedHash: 'h9', matchedBy: long },
      { platformId: 8, storedHash: 'h8', matchedBy: 'x:Zürich-1' },
    ]);
  });

  it('says whether a prefix holds state, writing nothing to ask', async () => {
    const fresh = new StateStore(redis, { prefix: `${prefix}:fresh` });
    expect(await fresh.hasState()).toBe(false);
    await fresh.records.lookup('companies', [{ keys: ['x:E1'] }]);
    expect(await fresh.hasState()).toBe(false);
    expect(await redis.keys(`${prefix}:fresh*`)).toEqual([]);
    await fresh.index.replace('companies', pages([{ id: 1, ...company(1) }], 10));
    expect(await fresh.hasState()).toBe(true);
    const synced = new StateStore(redis, { prefix: `${prefix}:synced` });
    await synced.records.commit('companies', [
      { keys: ['x:E1'], platformId: 1, hash: 'h', runId: 'r', job: 'j' },
    ]);
    expect(await synced.hasState()).toBe(true);
  });

  it('claims a batch of 1,000 rows in one round trip, two when it finds conflicts', async () => {
    const c = counting(redis);
    const store = new StateStore(c.client, { prefix: `${prefix}:claims` });
    const rows = Array.from({ length: 1000 }, (_, n) => ({
      line: n + 2,
      keys: identityKeys('companies', company(n)),
    }));
    expect(await store.claims.claim('run', rows)).toEqual([]);
    expect(c.trips()).toBe(1);
    c.reset();
    // Rows 1002 and 1003 repeat rows 2 and 3 of the first batch: both batches' rows are conflicts.
    const again = [1002, 1003].map((line, n) => ({ line, keys: rows[n]!.keys }));
    const conflicts = await store.claims.claim('run', [...rows.slice(500), ...again]);
    expect(conflicts.map((x) => [x.line, x.earlier])).toEqual([
      [1002, false],
      [1003, false],
      [2, true],
      [3, true],
    ]);
    expect(c.trips()).toBe(2);
  });

  it("names the buckets its scripts read as the store writes them, a prefix's % included", async () => {
    // The scripts name buckets with string.format from the prefix: a % in it must stay a %.
    const store = new StateStore(redis, { prefix: `${prefix}:100%d%%s%` });
    const rows = Array.from({ length: 50 }, (_, n) => company(n));
    const records = rows.map((b) => ({ keys: identityKeys('companies', b) }));
    await store.records.commit(
      'companies',
      records.map((r, n) => ({
        keys: r.keys,
        platformId: n + 7,
        hash: `h${n}`,
        runId: 'r',
        job: 'j',
      })),
    );
    const known = await store.records.lookup('companies', records);
    expect(known.map((k) => [k.platformId, k.storedHash])).toEqual(
      records.map((_, n) => [n + 7, `h${n}`]),
    );
    const claims = records.map((r, n) => ({ line: n + 2, keys: r.keys }));
    expect(await store.claims.claim('run', claims)).toEqual([]);
    expect(
      await store.claims.holders(
        'run',
        claims.map((c) => c.keys[0]!),
      ),
    ).toEqual(claims.map((c) => c.line));
  });

  it('refuses a prefix without a hash tag, and a layout with other bucket counts', async () => {
    expect(() => new StateStore(redis, { prefix: 'crm-sync' })).toThrow(/hash tag/);
    expect(() => new StateStore(redis, { prefix: '{}crm' })).toThrow(/hash tag/);
    const p = `${prefix}:layout`;
    await new StateStore(redis, { prefix: p }).records.commit('companies', []);
    const other = new StateStore(redis, { prefix: p, buckets: { ids: 16, records: 16 } });
    await expect(other.records.lookup('companies', [])).rejects.toMatchObject({
      code: 'state.layout-mismatch',
    });
  });
});

describe('StateStore: index of platform records', () => {
  it('adopts listed records by identity, with their values as remote', async () => {
    let clock = 1_000;
    const store = new StateStore(redis, { prefix: `${prefix}:ix`, now: () => clock });
    expect(await store.index.info('companies')).toBeNull();
    const listed: PlatformRecord[] = [
      { id: 7, ...company(1), created_at: '2024-01-01T00:00:00Z', avatar: null },
      { id: 8, crm_company_id: 100_002, name: 'Company 2', website: null },
      { id: 9, name: 'no identity at all' },
      { id: 10, external_id: 'E1', name: 'a second E1' },
      { id: 7, ...company(1) }, // a repeat across pages
    ];
    const info = await store.index.replace('companies', pages(listed, 2));
    expect(info).toMatchObject({ count: 3, ambiguous: 1, unmatchable: 1, refreshedAt: 1_000 });
    expect(await store.index.info('companies')).toEqual(info);

    clock = 2_000;
    const rows = [company(1), { ...company(2), website: 'https://new.example' }, company(3)];
    const inputs = rows.map((body, n) => ({
      line: n + 2,
      body,
      keys: identityKeys('companies', body),
      hash: contentHash(body, 'fp'),
    }));
    const known = await store.records.lookup('companies', inputs);
    expect(known[0]).toEqual({ platformId: 7, remote: company(1), matchedBy: inputs[0]!.keys[0] });
    // Record 8 has no external_id on the platform: its crm_company_id finds it.
    expect(known[1]).toEqual({
      platformId: 8,
      matchedBy: 'c:100002',
      remote: { crm_company_id: 100_002, name: 'Company 2', website: null },
    });
    expect(known[2]).toEqual({});
    const actions = planBatch(inputs, known, { entity: 'companies' });
    expect(actions.map((a) => a.kind)).toEqual(['adopt', 'update', 'create']);

    // After our own write the listing is stale for that record: no remote until the next listing.
    await store.records.commit('companies', [
      { keys: inputs[1]!.keys, platformId: 8, hash: inputs[1]!.hash, runId: 'r1', job: 'j' },
    ]);
    const [, afterWrite] = await store.records.lookup('companies', inputs);
    expect(afterWrite).toEqual({
      platformId: 8,
      storedHash: inputs[1]!.hash,
      matchedBy: inputs[1]!.keys[0],
    });
  });

  it("reads a listed record for planning only where it can change the row's action", async () => {
    let clock = 500;
    const c = counting(redis);
    const store = new StateStore(c.client, { prefix: `${prefix}:ix-plan`, now: () => clock });
    const bodies = [company(1), company(2), company(3)];
    const hashOf = (b: Record<string, unknown>) => contentHash(b, 'fp');
    // Our writes first, then a listing that reflects them: the listed values are fresh.
    await store.records.commit(
      'companies',
      bodies.map((b, n) => ({
        keys: identityKeys('companies', b),
        platformId: n + 1,
        hash: hashOf(b),
        runId: 'r1',
        job: 'j',
      })),
    );
    clock = 1_000;
    await store.index.replace(
      'companies',
      pages(
        bodies.map((b, n) => ({ id: n + 1, ...b })),
        10,
      ),
    );
    const changed = { ...company(2), name: 'Company 2, renamed' };
    // Row 3 carries another source's external_id: its crm_account_id finds record 3.
    const foreign = { ...company(3), external_id: 'OTHER-3' };
    const rows = [company(1), changed, foreign].map((body, n) => ({
      line: n + 2,
      body,
      keys: identityKeys('companies', body),
      hash: hashOf(body),
    }));

    c.reset();
    const planned = await store.records.lookup('companies', rows, {
      job: 'j',
      planning: { verifyRemote: false },
    });
    // The unchanged row found by its external_id needs nothing from the listing.
    expect(planned[0]).toEqual({
      platformId: 1,
      storedHash: hashOf(company(1)),
      matchedBy: 'x:E1',
    });
    expect(planned[1]).toMatchObject({ platformId: 2, remote: company(2) });
    expect(planned[2]).toMatchObject({ platformId: 3, matchedBy: 'a:A3', remote: company(3) });
    // The plan is the one a full lookup gives.
    const full = await store.records.lookup('companies', rows, { job: 'j' });
    expect(full[0]).toMatchObject({ remote: company(1) });
    const opts = { entity: 'companies' as const };
    expect(planBatch(rows, planned, opts)).toEqual(planBatch(rows, full, opts));
    expect(planBatch(rows, planned, opts).map((a) => a.kind)).toEqual([
      'unchanged',
      'update',
      'conflict',
    ]);

    // Only unchanged rows matched by their external_id: one round trip, no listed record read.
    c.reset();
    const quiet = await store.records.lookup('companies', rows.slice(0, 1), {
      job: 'j',
      planning: { verifyRemote: false },
    });
    expect(quiet[0]!.remote).toBeUndefined();
    expect(c.trips()).toBe(1);

    // --full compares every row with the platform's values.
    const verified = await store.records.lookup('companies', rows, {
      job: 'j',
      planning: { verifyRemote: true },
    });
    expect(verified[0]).toMatchObject({ remote: company(1) });
  });

  it('never replaces a good index with a half-done listing', async () => {
    const store = new StateStore(redis, { prefix: `${prefix}:swap`, indexGraceMs: 60_000 });
    const first = Array.from({ length: 50 }, (_, n) => ({ id: n + 1, external_id: `E${n}` }));
    const good = await store.index.replace('companies', pages(first, 20));
    expect(good.count).toBe(50);

    const second = Array.from({ length: 50 }, (_, n) => ({ id: n + 1000, external_id: `N${n}` }));
    await expect(store.index.replace('companies', pages(second, 20, 40))).rejects.toThrow(
      'listing broke off',
    );
    expect(await store.index.info('companies')).toEqual(good);
    const [old, fresh] = await store.records.lookup('companies', [
      { keys: ['x:E3'] },
      { keys: ['x:N3'] },
    ]);
    expect(old?.platformId).toBe(4);
    expect(fresh).toEqual({});

    // A build in progress is invisible until committed; then the swap is whole.
    const build = await store.index.begin('companies');
    await store.index.add(build, second.slice(0, 25));
    expect((await store.records.lookup('companies', [{ keys: ['x:N3'] }]))[0]).toEqual({});
    await store.index.add(build, second.slice(25));
    const swapped = await store.index.commit(build);
    expect(swapped).toMatchObject({ count: 50, generation: good.generation + 2 });
    const [gone, now] = await store.records.lookup('companies', [
      { keys: ['x:E3'] },
      { keys: ['x:N3'] },
    ]);
    expect(gone).toEqual({});
    expect(now?.platformId).toBe(1003);
    // The committed generation keeps every key it holds, for good (no build TTL left):
    // PTTL of each of its possible keys, in one pipeline (-2: no such key).
    const p = redis.pipeline();
    for (const k of store.keys.indexGeneration('companies', swapped.generation)) p.pttl(k);
    const ttls = ((await p.exec()) ?? []).map(([, v]) => Number(v)).filter((t) => t !== -2);
    expect(ttls.length).toBeGreaterThan(0);
    expect(new Set(ttls)).toEqual(new Set([-1]));
    // The old generation is left to expire (grace period), not deleted under a reader's feet.
    const ttl = await redis.pttl(
      store.keys.indexIds('companies', good.generation, store.keys.idBucketOf('x:E3')),
    );
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60_000);
  });
});

describe('StateStore: orphans and key layout', () => {
  /** A record job `j` wrote in run `old`, at 5. */
  const oldRecord = (id: number) => ({
    keys: [`x:E${id}`],
    platformId: id,
    hash: 'h',
    runId: 'old',
    job: 'j',
    at: 5,
  });

  it('lists records in state that the run neither saw nor wrote', async () => {
    const store = new StateStore(redis, { prefix: `${prefix}:orphans` });
    await store.records.commit('companies', [1, 2, 3, 4].map(oldRecord));
    await store.seen.mark('new', [1, 3]);
    await store.records.commit('companies', [
      { keys: ['x:E4'], platformId: 4, hash: 'h2', runId: 'new', job: 'j' },
    ]);
    const found = [];
    for await (const batch of store.records.orphans('companies', { id: 'new', job: 'j' }))
      found.push(...batch);
    expect(found).toEqual([{ platformId: 2, syncedAt: 5 }]);
    // A run that saw nothing and wrote nothing: everything in state is an orphan.
    const all = [];
    for await (const batch of store.records.orphans('companies', { id: 'empty-export', job: 'j' }))
      all.push(...batch);
    expect(all.map((o) => o.platformId).sort()).toEqual([1, 2, 3, 4]);
  });

  it('reads every record bucket for orphans, about so many records a round trip: few round trips, and no large reply holds the event loop', async () => {
    const store = new StateStore(redis, { prefix: `${prefix}:orphans-scan` });
    const buckets = store.keys.buckets.records;
    // A record in every bucket (a platform id's bucket is the id modulo their count).
    await store.records.commit(
      'companies',
      Array.from({ length: buckets }, (_, id) => oldRecord(id)),
    );
    /** Every pipeline a scan runs, by the buckets it reads (HGETALLs), and the orphans it found. */
    async function scan(how?: OrphanScan): Promise<{ reads: number[]; found: number }> {
      const reads: number[] = [];
      const pipeline = redis.pipeline;
      redis.pipeline = function (this: Redis, ...args: Parameters<Redis['pipeline']>) {
        const p = pipeline.apply(this, args);
        let n = 0;
        const hgetall = p.hgetall.bind(p);
        p.hgetall = ((...a: Parameters<typeof hgetall>) => {
          n++;
          return hgetall(...a);
        }) as typeof p.hgetall;
        const exec = p.exec.bind(p);
        p.exec = (...a: Parameters<typeof p.exec>) => {
          if (n > 0) reads.push(n);
          return exec(...a);
        };
        return p;
      } as Redis['pipeline'];
      let found = 0;
      try {
        for await (const batch of store.records.orphans('companies', { id: 'new', job: 'j' }, how))
          found += batch.length;
      } finally {
        redis.pipeline = pipeline;
      }
      return { reads, found };
    }
    // The release's: a few buckets first, then more as they hold few records (here one each).
    const release = await scan();
    expect(release.found).toBe(buckets);
    expect(release.reads.reduce((a, b) => a + b, 0)).toBe(buckets);
    expect(release.reads[0]).toBe(ORPHAN_SCAN_BUCKETS);
    expect(ORPHAN_SCAN_BUCKETS).toBeLessThanOrEqual(64);
    expect(release.reads.length).toBeLessThanOrEqual(6);
    expect(Math.max(...release.reads)).toBeLessThanOrEqual(ORPHAN_SCAN_RECORDS);
    // About 100 records a round trip: 100 buckets of one record each after the first.
    const small = await scan({ records: 100 });
    expect(small.found).toBe(buckets);
    expect(small.reads.reduce((a, b) => a + b, 0)).toBe(buckets);
    expect(small.reads[0]).toBe(ORPHAN_SCAN_BUCKETS);
    expect(Math.max(...small.reads.slice(1))).toBe(100);
    // A fixed size (the bench's).
    expect((await scan({ buckets: 256 })).reads).toEqual(Array(buckets / 256).fill(256));
  });

  it('keeps seen ids in small sets of integers with a TTL, and reads the one set of older runs', async () => {
    const store = new StateStore(redis, { prefix: `${prefix}:seen` });
    const ids = Array.from({ length: 3000 }, (_, n) => n + 1);
    await store.records.commit(
      'companies',
      ids.map((id) => ({ keys: [`x:E${id}`], platformId: id, hash: 'h', runId: 'old', job: 'j' })),
    );
    await store.seen.mark('new', ids.slice(0, 2990));
    // Each id in the seen bucket of its record bucket: an intset of a few ids, not one set of all.
    const bucket = store.keys.seenBucket('new', store.keys.recBucketOf(7));
    expect(await redis.sismember(bucket, '7')).toBe(1);
    expect(await redis.object('ENCODING', bucket)).toBe('intset');
    expect(await redis.pttl(bucket)).toBeGreaterThan(0);
    expect(await redis.exists(store.keys.seen('new'))).toBe(0);
    const orphans = async (id: string) => {
      const found: number[] = [];
      for await (const batch of store.records.orphans('companies', { id, job: 'j' }))
        found.push(...batch.map((o) => o.platformId));
      return found.sort((a, b) => a - b);
    };
    expect(await orphans('new')).toEqual(ids.slice(2990));
    // A run begun by a release that kept one set: its ids count, beside any in buckets.
    await redis.sadd(store.keys.seen('older'), ...ids.slice(0, 2995).map(String));
    await store.seen.mark('older', [2998]);
    expect(await orphans('older')).toEqual([2996, 2997, 2999, 3000]);
  });

  it("finds the orphans of the run's job by the job that last wrote them, the run long forgotten", async () => {
    const store = new StateStore(redis, { prefix: `${prefix}:orphans-jobs` });
    const commit = (ids: number[], runId: string, job: string) =>
      store.records.commit(
        'companies',
        ids.map((id) => ({ keys: [`x:E${id}`], platformId: id, hash: 'h', runId, job, at: 5 })),
      );
    await commit([1, 2], 'run-gone', 'accounts');
    await commit([3], 'run-kept', 'accounts');
    await commit([4], 'run-other', 'other-accounts');
    // The history forgot run-gone (its number is gone) and run-kept's record.
    const ids = store.keys.runIds();
    const gone = await redis.hget(ids, 'r:run-gone');
    await redis.hdel(ids, 'r:run-gone', `s:${gone}`);
    // State written before job numbers were kept names its run only: that run's job decides.
    const bucket = (id: number) => store.keys.recs('companies', store.keys.recBucketOf(id));
    for (const [id, run] of [
      [5, 'legacy-mine'],
      [6, 'legacy-other'],
      [7, 'legacy-unknown'],
    ] as const) {
      const init = { id: run, entity: 'companies', mode: 'upsert', source: 'a.csv' } as const;
      if (run !== 'legacy-unknown')
        await store.runs.create({ ...init, job: run === 'legacy-mine' ? 'accounts' : 'other' });
      await commit([id], run, 'accounts');
      const [hash, at, number] = (await redis.hget(bucket(id), String(id)))!.split('.');
      await redis.hset(bucket(id), String(id), `${hash}.${at}.${number}`);
    }

    const found = [];
    for await (const batch of store.records.orphans('companies', {
      id: 'run-new',
      job: 'accounts',
    }))
      found.push(...batch);
    expect(found.map((o) => o.platformId).sort()).toEqual([1, 2, 3, 5]);
    // A job that never wrote a record has no orphans.
    const none = [];
    for await (const batch of store.records.orphans('companies', { id: 'run-x', job: 'never-ran' }))
      none.push(...batch);
    expect(none).toEqual([]);
  });

  it('puts every key it creates under the prefix, in its hash tag', async () => {
    const keys = await keysMatching(redis, `*${prefix.slice(1, -1)}*`);
    expect(keys.length).toBeGreaterThan(100);
    for (const key of keys) {
      expect(key.startsWith(prefix)).toBe(true);
      expect(hashTag(key)).toBe(prefix.slice(1, -1));
    }
  });
});
