import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileDuplicates } from '../../src/crm/duplicates.js';
import { compileMapping, MappingError } from '../../src/crm/mapping.js';
import {
  beats,
  decideSurvivors,
  MemorySurvivors,
  rankOf,
  type Entrant,
  type KeepRule,
} from '../../src/sync/survivors.js';

const row = (line: number, keys: string[], rank?: number, sticky = false): Entrant => ({
  line,
  keys,
  rank,
  sticky,
  ref: `x:R${line}`,
});

describe('beats', () => {
  const a = { line: 2, sticky: false, rank: 10, ref: 'x:A' };
  const b = { line: 3, sticky: false, rank: 20, ref: 'x:B' };
  it('first keeps the earlier row, last the later', () => {
    expect(beats('first', b, a)).toBe(false);
    expect(beats('first', a, b)).toBe(true);
    expect(beats('last', b, a)).toBe(true);
    expect(beats('last', a, b)).toBe(false);
  });
  it('newest and oldest compare ranks; a tie or no rank on both goes to the earlier row', () => {
    expect(beats('newest', b, a)).toBe(true);
    expect(beats('oldest', b, a)).toBe(false);
    expect(beats('oldest', a, b)).toBe(true);
    expect(beats('newest', { ...b, rank: 10 }, a)).toBe(false);
    expect(beats('newest', a, { ...b, rank: 10 })).toBe(true);
    expect(beats('newest', { ...b, rank: undefined }, { ...a, rank: undefined })).toBe(false);
  });
  it('a row without a rank loses to one with a rank, under newest and oldest alike', () => {
    expect(beats('newest', { ...b, rank: undefined }, a)).toBe(false);
    expect(beats('oldest', { ...b, rank: undefined }, a)).toBe(false);
    expect(beats('oldest', b, { ...a, rank: undefined })).toBe(true);
  });
  it('a sticky row beats any row that is not, whatever the rule', () => {
    for (const keep of ['first', 'last', 'newest', 'oldest'] as KeepRule[]) {
      expect(beats(keep, { ...a, sticky: true }, b)).toBe(true);
      expect(beats(keep, { ...b, sticky: true }, a)).toBe(true);
      expect(beats(keep, a, { ...b, sticky: true })).toBe(false);
    }
  });
});

describe('decideSurvivors', () => {
  it('keeps the newest of one e-mail across batches, and reports each loser once', () => {
    const s = new MemorySurvivors('newest');
    expect(s.contend([row(2, ['x:A', 'e:m'], 100), row(3, ['x:C', 'e:n'], 5)])).toEqual([]);
    // Line 4 is older than line 2 (loses now); line 5 is newer (line 2, of an earlier batch, loses).
    expect(s.contend([row(4, ['x:D', 'e:m'], 50), row(5, ['x:E', 'e:m'], 300)])).toEqual([
      { line: 4, ref: 'x:R4', winner: 2, winnerRef: 'x:R2', identity: 'e:m', earlier: false },
      { line: 2, ref: 'x:R2', winner: 5, winnerRef: 'x:R5', identity: 'e:m', earlier: true },
    ]);
    expect(s.holder('e:m')?.line).toBe(5);
    expect(s.holder('x:A')?.line).toBe(2);
  });

  it('reports a loser of the same batch as not earlier: it has no planned write yet', () => {
    const d = decideSurvivors('last', new Map(), [row(2, ['x:A', 'c:1']), row(3, ['x:B', 'c:1'])]);
    expect(d.lost).toEqual([
      { line: 2, ref: 'x:R2', winner: 3, winnerRef: 'x:R3', identity: 'c:1', earlier: false },
    ]);
  });

  it("reports a holder of several of the row's keys once, on the first key shared", () => {
    const holder = { line: 2, sticky: false, rank: undefined, ref: 'x:R2' };
    const holders = new Map([
      ['a:7', holder],
      ['c:1', holder],
    ]);
    const d = decideSurvivors('last', holders, [row(5, ['x:B', 'a:7', 'c:1'])]);
    expect(d.lost).toEqual([
      { line: 2, ref: 'x:R2', winner: 5, winnerRef: 'x:R5', identity: 'a:7', earlier: true },
    ]);
    expect([...d.taken.keys()]).toEqual(['x:B', 'a:7', 'c:1']);
  });

  it('reports every distinct holder a winning row beat', () => {
    const holders = new Map([
      ['a:7', { line: 2, sticky: false, rank: undefined, ref: 'x:R2' }],
      ['c:1', { line: 3, sticky: false, rank: undefined, ref: 'x:R3' }],
    ]);
    const d = decideSurvivors('last', holders, [row(5, ['x:B', 'a:7', 'c:1'])]);
    expect(d.lost).toEqual([
      { line: 2, ref: 'x:R2', winner: 5, winnerRef: 'x:R5', identity: 'a:7', earlier: true },
      { line: 3, ref: 'x:R3', winner: 5, winnerRef: 'x:R5', identity: 'c:1', earlier: true },
    ]);
  });

  it('a row read again (a resumed batch) does not lose to itself', () => {
    const me = { line: 4, sticky: false, rank: 1, ref: 'x:R4' };
    for (const keep of ['first', 'last', 'newest', 'oldest'] as KeepRule[]) {
      const d = decideSurvivors(keep, new Map([['c:1', me]]), [row(4, ['x:D', 'c:1'], 1)]);
      expect(d.lost).toEqual([]);
      expect(d.taken.get('c:1')?.line).toBe(4);
    }
  });

  it('a loser takes no key, and a winner takes every key it carries', () => {
    const holders = new Map([['e:m', { line: 2, sticky: false, rank: 9, ref: 'x:A' }]]);
    const d = decideSurvivors('first', holders, [row(3, ['x:B', 'e:m']), row(4, ['x:B'])]);
    // Line 3 lost and holds nothing, so line 4 (same external id) is free.
    expect([...d.taken.keys()]).toEqual(['x:B']);
    expect(d.taken.get('x:B')?.line).toBe(4);
    expect(d.lost.map((l) => l.line)).toEqual([3]);
    expect([...holders.keys()]).toEqual(['e:m']);
  });

  it('for rows sharing one key, the survivor is the best by the rule whatever the order and batches', () => {
    const keeps: KeepRule[] = ['first', 'last', 'newest', 'oldest'];
    fc.assert(
      fc.property(
        fc.constantFrom(...keeps),
        fc.array(
          fc.record({
            rank: fc.option(fc.integer({ min: 0, max: 5 }), { nil: undefined }),
            sticky: fc.boolean(),
          }),
          { minLength: 1, maxLength: 12 },
        ),
        fc.integer({ min: 1, max: 5 }),
        (keep, rows, batchSize) => {
          const entrants = rows.map((r, i) => row(i + 2, ['e:same'], r.rank, r.sticky));
          // The oracle: sort by the rule's preference, written apart from `beats`.
          const pref = (e: Entrant): number[] => {
            const rankKey =
              keep === 'newest'
                ? e.rank === undefined
                  ? -Infinity
                  : e.rank
                : keep === 'oldest'
                  ? e.rank === undefined
                    ? -Infinity
                    : -e.rank
                  : keep === 'last'
                    ? e.line
                    : 0;
            return [e.sticky ? 1 : 0, rankKey, -e.line];
          };
          const best = [...entrants].sort((x, y) => {
            const [a, b] = [pref(x), pref(y)];
            for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return b[i]! - a[i]!;
            return 0;
          })[0]!;
          const s = new MemorySurvivors(keep);
          const lost: number[] = [];
          for (let i = 0; i < entrants.length; i += batchSize)
            lost.push(...s.contend(entrants.slice(i, i + batchSize)).map((l) => l.line));
          expect(s.holder('e:same')?.line).toBe(best.line);
          // Every other row lost exactly once; the survivor never did.
          expect(lost.sort((a, b) => a - b)).toEqual(
            entrants.map((e) => e.line).filter((l) => l !== best.line),
          );
        },
      ),
    );
  });
});

describe('rankOf', () => {
  it('reads numbers, numeric text and the dates CRMs write, as UTC when no zone is named', () => {
    expect(rankOf(42)).toBe(42);
    expect(rankOf(' 1700000000000 ')).toBe(1_700_000_000_000);
    expect(rankOf('2024-01-05T10:00:00.000Z')).toBe(Date.UTC(2024, 0, 5, 10));
    // Salesforce writes the offset without a colon.
    expect(rankOf('2024-01-05T10:00:00.000+0000')).toBe(Date.UTC(2024, 0, 5, 10));
    expect(rankOf('2024-01-05T12:00:00+02:00')).toBe(Date.UTC(2024, 0, 5, 10));
    // HubSpot's UI export and Pipedrive: a space, no zone.
    expect(rankOf('2024-01-05 10:00')).toBe(Date.UTC(2024, 0, 5, 10));
    expect(rankOf('2024-01-05 10:00:30')).toBe(Date.UTC(2024, 0, 5, 10, 0, 30));
    expect(rankOf('2024-01-05')).toBe(Date.UTC(2024, 0, 5));
    expect(rankOf('2024-01-05T10:00:00+0200')).toBe(Date.UTC(2024, 0, 5, 8));
    expect(rankOf('-3')).toBe(-3);
    expect(rankOf('+5')).toBe(5);
    expect(rankOf('1.25')).toBe(1.25);
  });

  it('reads a date without a zone as UTC whatever the local zone', () => {
    const zone = process.env.TZ;
    process.env.TZ = 'America/New_York';
    try {
      expect(rankOf('2024-01-05 10:00')).toBe(Date.UTC(2024, 0, 5, 10));
      expect(rankOf('2024-01-05')).toBe(Date.UTC(2024, 0, 5));
    } finally {
      if (zone === undefined) delete process.env.TZ;
      else process.env.TZ = zone;
    }
  });
  it('has no rank for anything else', () => {
    for (const v of [
      '',
      '  ',
      'yesterday',
      '05/01/2024',
      'x2024-01-05',
      '2024-01-05 10:00 PST',
      null,
      true,
      {},
      Number.NaN,
      undefined,
    ])
      expect(rankOf(v)).toBeUndefined();
  });
});

describe('duplicates section', () => {
  const base = {
    name: 'm',
    version: 1,
    entity: 'members',
    fields: { email: { from: 'Email' } },
  };
  it('defaults to newest with by, first without, and none without the section', () => {
    expect(compileMapping(base).duplicates.keep).toBe('none');
    // keep: none reads no `by` (no rank is computed).
    expect(compileDuplicates({ keep: 'none', by: 'T' }).by).toBeUndefined();
    expect(compileMapping({ ...base, duplicates: {} }).duplicates.keep).toBe('first');
    const m = compileMapping({ ...base, duplicates: { by: ['Modified', 'Changed'] } });
    expect(m.duplicates.keep).toBe('newest');
    expect(m.duplicates.rank({ Changed: '2024-01-05' })).toBe(Date.UTC(2024, 0, 5));
    expect(m.duplicates.rank({ Modified: '7', Changed: '2024-01-05' })).toBe(7);
    // Path coverage looks at by as at an optional field (validate and plan warn when it finds nothing).
    expect(m.paths.filter((u) => u.field === 'duplicates.by')).toEqual([
      { field: 'duplicates.by', refs: ['Modified', 'Changed'], required: false },
    ]);
  });
  it('refuses newest or oldest without by, and unknown rules, naming the path', () => {
    expect(() => compileMapping({ ...base, duplicates: { keep: 'oldest' } })).toThrow(
      /duplicates\.by: keep: oldest needs by/,
    );
    try {
      compileMapping({ ...base, duplicates: { keep: 'best' } });
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(MappingError);
      expect((err as MappingError).problems[0]).toMatch(/^duplicates\.keep: /);
    }
  });
  it('ranks a row by the first by column with a value', () => {
    expect(compileDuplicates({ keep: 'oldest', by: 'T' }).rank({ T: '' })).toBeUndefined();
  });
});
