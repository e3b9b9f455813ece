import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  decideClaims,
  MemoryClaims,
  type Claim,
  type ConflictRecord,
} from '../../src/sync/claims.js';
import { readSchedule } from '../harness/claims.js';

describe('decideClaims', () => {
  it('finds identities claimed twice across batches, reporting every row once', () => {
    const claims = new MemoryClaims();
    expect(
      claims.claim([
        { line: 2, keys: ['x:E1', 'a:A1'] },
        { line: 3, keys: ['x:E2'] },
      ]),
    ).toEqual([]);
    // Line 4 repeats line 2's account id; line 5 repeats line 4's external id; line 6 is fine.
    expect(
      claims.claim([
        { line: 4, keys: ['x:E4', 'a:A1'] },
        { line: 5, keys: ['x:E4'] },
        { line: 6, keys: ['x:E6'] },
      ]),
    ).toEqual([
      { line: 4, identity: 'a:A1', otherLines: [2, 5], earlier: false },
      { line: 5, identity: 'x:E4', otherLines: [4], earlier: false },
      { line: 2, identity: 'a:A1', otherLines: [4], earlier: true },
    ]);
    // A third row with E1 conflicts; line 2 is not reported again.
    expect(claims.claim([{ line: 7, keys: ['x:E1'] }])).toEqual([
      { line: 7, identity: 'x:E1', otherLines: [2], earlier: false },
    ]);
    // Reading the first batch again (a resumed run) reports its row in conflict, with all it knows.
    expect(
      claims.claim([
        { line: 2, keys: ['x:E1', 'a:A1'] },
        { line: 3, keys: ['x:E2'] },
      ]),
    ).toEqual([{ line: 2, identity: 'a:A1', otherLines: [4, 7], earlier: false }]);
  });

  it('answers with the new holders and the records to keep, and changes nothing it is given', () => {
    const holders = new Map([['x:E1', 2]]);
    const conflicts = new Map<number, ConflictRecord>();
    const d = decideClaims({ holders, conflicts }, [
      { line: 3, keys: ['x:E3', 'x:E1'] },
      { line: 4, keys: ['x:E3'] },
    ]);
    expect([...d.claimed]).toEqual([['x:E3', 3]]);
    expect([...d.recorded]).toEqual([
      [3, { identity: 'x:E1', otherLines: [2, 4] }],
      [2, { identity: 'x:E1', otherLines: [3] }],
      [4, { identity: 'x:E3', otherLines: [3] }],
    ]);
    expect([...holders]).toEqual([['x:E1', 2]]);
    expect(conflicts.size).toBe(0);
  });

  it('reports exactly the rows that share a key with another row, earlier ones once', () => {
    fc.assert(
      fc.property(readSchedule, (schedule) => {
        const claims = new MemoryClaims();
        const read = new Map<number, readonly string[]>();
        const sharers = (line: number): Set<number> => {
          const keys = read.get(line)!;
          const out = new Set<number>();
          for (const [other, k] of read)
            if (other !== line && k.some((key) => keys.includes(key))) out.add(other);
          return out;
        };
        let inConflict = new Set<number>();
        for (const batch of schedule) {
          const got = claims.claim(batch.rows);
          for (const r of batch.rows) read.set(r.line, r.keys);
          const now = new Set([...read.keys()].filter((l) => sharers(l).size > 0));
          const lines = new Set(batch.rows.map((r) => r.line));

          expect(got.filter((c) => !c.earlier).map((c) => c.line)).toEqual(
            batch.rows.filter((r) => now.has(r.line)).map((r) => r.line),
          );
          expect(new Set(got.filter((c) => c.earlier).map((c) => c.line))).toEqual(
            new Set([...now].filter((l) => !lines.has(l) && !inConflict.has(l))),
          );
          if (batch.reread) expect(got.filter((c) => c.earlier)).toEqual([]);
          for (const c of got) {
            const others = sharers(c.line);
            expect(read.get(c.line)).toContain(c.identity);
            expect([...others].some((o) => read.get(o)!.includes(c.identity))).toBe(true);
            expect(c.otherLines.length).toBeGreaterThan(0);
            expect(new Set(c.otherLines).size).toBe(c.otherLines.length);
            for (const o of c.otherLines) expect(others.has(o)).toBe(true);
          }
          inConflict = now;
        }
      }),
    );
  });

  it('decides the same on the holders after the batch claimed its free keys first (as Redis does)', () => {
    fc.assert(
      fc.property(readSchedule, (schedule) => {
        const holders = new Map<string, number>();
        const conflicts = new Map<number, ConflictRecord>();
        for (const { rows } of schedule) {
          const before = decideClaims({ holders, conflicts }, rows);
          const after = decideClaims({ holders: firstClaimed(holders, rows), conflicts }, rows);
          expect(after.conflicts).toEqual(before.conflicts);
          expect(after.recorded).toEqual(before.recorded);
          expect(after.claimed.size).toBe(0);
          for (const [k, l] of before.claimed) holders.set(k, l);
          for (const [l, r] of before.recorded) conflicts.set(l, r);
        }
      }),
    );
  });
});

/** The holders once each key nobody held went to the first row carrying it (HSETNX in order). */
function firstClaimed(
  holders: ReadonlyMap<string, number>,
  rows: readonly Claim[],
): Map<string, number> {
  const out = new Map(holders);
  for (const r of rows) for (const k of r.keys) if (!out.has(k)) out.set(k, r.line);
  return out;
}
