/**
 * The survivor claims in Redis (one Lua script) and the dry run's in memory
 * (`decideSurvivors`) decide alike: for random exports read in batches, rows
 * with overlapping keys, ranks (some missing, some tied, whole and not,
 * small and near 2^53), sticky rows and records whose text holds the
 * separator or is one of the row's keys, both report the same losers in the
 * same order, batch after batch, and name the same survivor of each key at
 * the end; every claim bucket written has its TTL.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemorySurvivors, type Entrant, type KeepRule } from '../../src/sync/survivors.js';
import { StateStore } from '../../src/state/store.js';
import { useRedis } from '../harness/redis.js';

const { redis, prefix } = useRedis();
const store = new StateStore(redis, { prefix });

const KEYS = ['x:A', 'x:B', 'x:C', 'e:a@x.io', 'e:b@x.io', 'e:c@x.io'];

const schedule = fc
  .array(
    fc.record({
      keys: fc.uniqueArray(fc.constantFrom(...KEYS), { minLength: 1, maxLength: 3 }),
      // Small and large whole ranks (a claim holds them in base 64), and others (in decimal).
      rank: fc.option(
        fc.oneof(
          fc.integer({ min: 0, max: 3 }),
          fc.constantFrom(
            1_767_225_600_000,
            1_767_225_600_001,
            1_767_225_600_064,
            Number.MAX_SAFE_INTEGER,
            Number.MAX_SAFE_INTEGER - 1,
          ),
          fc.constantFrom(1_767_225_600_000.5, -1, -1.5, 2 ** 60),
        ),
        { nil: undefined },
      ),
      sticky: fc.boolean(),
      // The record: another text, or one of the row's keys (the planner's is its first).
      ref: fc.oneof(
        fc.constantFrom('x:salesforce:003A', 'x:a|b', 'e:z@x.io'),
        fc.nat({ max: 2 }).map((n) => -1 - n),
      ),
    }),
    { minLength: 1, maxLength: 24 },
  )
  .chain((rows) =>
    fc.record({
      rows: fc.constant(
        rows.map((r, i): Entrant => ({
          ...r,
          ref: typeof r.ref === 'number' ? r.keys[(-1 - r.ref) % r.keys.length]! : r.ref,
          line: i + 2,
        })),
      ),
      batch: fc.integer({ min: 1, max: 6 }),
      keep: fc.constantFrom<KeepRule>('newest', 'oldest', 'first', 'last'),
    }),
  );

describe('survivor claims in Redis and in memory', () => {
  it('give the same losers for every batch and the same survivor of every key', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(schedule, async ({ rows, batch, keep }) => {
        const runId = `survivors-${run++}`;
        const memory = new MemorySurvivors(keep);
        for (let i = 0; i < rows.length; i += batch) {
          const part = rows.slice(i, i + batch);
          expect(await store.survivors.contend(runId, keep, part)).toEqual(memory.contend(part));
        }
        const reported = new Map<number, { line: number; record: string }>();
        for await (const page of store.survivors.duplicates(runId))
          for (const d of page) reported.set(d.line, d.survivor);
        for (const [line, survivor] of reported) {
          const row = rows.find((r) => r.line === line)!;
          const lostOn = row.keys.find((k) => memory.holder(k)?.line === survivor.line);
          expect(lostOn, `line ${line}'s survivor holds one of its keys`).toBeDefined();
          expect(survivor.record).toBe(memory.holder(lostOn!)!.ref);
        }
        // Every claim bucket written has its TTL (scratch outlives a crash, not the week).
        const buckets = await redis.keys(`${store.keys.claimBucketPrefix(runId)}*`);
        for (const b of buckets) expect(await redis.pttl(b), b).toBeGreaterThan(0);
        await store.progress.clear(runId);
      }),
      { numRuns: 80 },
    );
  });
});

describe('survivor claims and the TTL of their buckets', () => {
  it('a bucket gets its TTL the first time a planning pass touches it, not on every batch', async () => {
    const runId = 'survivors-ttl';
    const row = (line: number): Entrant => ({
      line,
      keys: ['x:A'],
      sticky: false,
      rank: undefined,
      ref: 'x:A',
    });
    expect(await store.survivors.contend(runId, 'last', [row(2)])).toEqual([]);
    const [bucket] = await redis.keys(`${store.keys.claimBucketPrefix(runId)}*`);
    expect(await redis.pttl(bucket!)).toBeGreaterThan(60_000);
    // Shorter by hand: a later batch of the same pass leaves the bucket's TTL as it is.
    await redis.pexpire(bucket!, 30_000);
    const lost = await store.survivors.contend(runId, 'last', [row(3)]);
    expect(lost.map((l) => [l.line, l.winner])).toEqual([[2, 3]]);
    expect(await redis.pttl(bucket!)).toBeLessThanOrEqual(30_000);
    await store.progress.clear(runId);
  });

  it('a contest after the claims are released starts a new pass: its bucket gets the TTL again', async () => {
    const runId = 'survivors-ttl-again';
    const row: Entrant = { line: 2, keys: ['x:B'], sticky: false, rank: undefined, ref: 'x:B' };
    await store.survivors.contend(runId, 'last', [row]);
    await store.claims.release(runId);
    await store.survivors.contend(runId, 'last', [row]);
    const [bucket] = await redis.keys(`${store.keys.claimBucketPrefix(runId)}*`);
    expect(await redis.pttl(bucket!)).toBeGreaterThan(0);
    await store.progress.clear(runId);
  });
});
