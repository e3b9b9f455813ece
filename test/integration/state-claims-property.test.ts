/**
 * The run's identity claims in Redis and the dry run's in memory decide
 * alike: for random exports read in batches with overlapping keys, some
 * batches read again (a resumed run), both report the same conflicts, in the
 * same order, batch after batch; and what Redis kept answers `claims.holders`
 * as memory holds it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryClaims } from '../../src/sync/claims.js';
import { StateStore } from '../../src/state/store.js';
import { readSchedule } from '../harness/claims.js';
import { useRedis } from '../harness/redis.js';

const { redis, prefix } = useRedis();
const store = new StateStore(redis, { prefix });

describe('identity claims in Redis and in memory', () => {
  it('give the same conflicts for every batch, re-reads included', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(readSchedule, async (schedule) => {
        const runId = `claims-${run++}`;
        const memory = new MemoryClaims();
        const holders = new Map<string, number>();
        for (const batch of schedule) {
          const inRedis = await store.claims.claim(runId, batch.rows);
          expect(inRedis).toEqual(memory.claim(batch.rows));
          for (const r of batch.rows)
            for (const k of r.keys) if (!holders.has(k)) holders.set(k, r.line);
        }
        const keys = [...holders.keys()];
        expect(await store.claims.holders(runId, keys)).toEqual(keys.map((k) => holders.get(k)));
        await store.progress.clear(runId);
      }),
      { numRuns: 150 },
    );
  });

  it('carry every line a layout can hold, and refuse one beyond', async () => {
    const runId = 'claims-lines';
    const big = 2 ** 35 - 1;
    const rows = [
      { line: 3, keys: ['x:A'] },
      { line: 2 ** 28 + 5, keys: ['x:B', 'c:1'] },
      { line: 2 ** 32 + 7, keys: ['x:C'] },
      { line: big, keys: ['x:D', 'c:1'] },
    ];
    const memory = new MemoryClaims();
    expect(await store.claims.claim(runId, rows)).toEqual(memory.claim(rows));
    expect(await store.claims.holders(runId, ['x:A', 'x:B', 'c:1', 'x:C', 'x:D'])).toEqual([
      3,
      2 ** 28 + 5,
      2 ** 28 + 5,
      2 ** 32 + 7,
      big,
    ]);
    await expect(store.claims.claim(runId, [{ line: big + 1, keys: ['x:E'] }])).rejects.toThrow(
      RangeError,
    );
    await store.progress.clear(runId);
  });
});
