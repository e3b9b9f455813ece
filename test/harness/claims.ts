/**
 * Random exports for the identity-claim properties: rows with keys drawn
 * from a small pool (so rows often share one), read in batches, some batches
 * read again later as a resumed run does.
 */
import fc from 'fast-check';
import type { Claim } from '../../src/sync/claims.js';

/** One batch as read: `reread` when it is an earlier batch read again. */
export interface ReadBatch {
  rows: Claim[];
  reread: boolean;
}

// Keys in priority order, as identityKeys gives them; few values, so they collide.
const row = fc
  .record({
    x: fc.option(fc.integer({ min: 1, max: 6 }), { nil: undefined }),
    a: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
    c: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
  })
  .map(({ x, a, c }) => [
    ...(x !== undefined ? [`x:E${x}`] : []),
    ...(a !== undefined ? [`a:A${a}`] : []),
    ...(c !== undefined ? [`c:${c}`] : []),
  ])
  .filter((keys) => keys.length > 0);

/** Batches of an export (lines 2, 3, … in order), with re-reads of earlier batches between them. */
export const readSchedule: fc.Arbitrary<ReadBatch[]> = fc
  .record({
    rows: fc.array(row, { minLength: 1, maxLength: 30 }),
    sizes: fc.array(fc.integer({ min: 1, max: 8 }), { minLength: 1, maxLength: 30 }),
    // After batch n, optionally read batch (pick mod (n + 1)) again.
    rereads: fc.array(fc.option(fc.nat(), { nil: undefined }), { maxLength: 30 }),
  })
  .map(({ rows, sizes, rereads }) => {
    const batches: Claim[][] = [];
    let at = 0;
    for (let n = 0; at < rows.length; n++) {
      const size = sizes[n % sizes.length]!;
      batches.push(rows.slice(at, at + size).map((keys, i) => ({ keys, line: at + i + 2 })));
      at += size;
    }
    const schedule: ReadBatch[] = [];
    batches.forEach((rows, n) => {
      schedule.push({ rows, reread: false });
      const pick = rereads[n];
      if (pick !== undefined) schedule.push({ rows: batches[pick % (n + 1)]!, reread: true });
    });
    return schedule;
  });
