/**
 * Path coverage over the first rows of an export: counts per mapped path,
 * the hint for one that found nothing (where it stopped, nearest keys), and
 * the pure check that stops a run on a required field's path.
 */
import { describe, expect, it } from 'vitest';
import {
  checkPathCoverage,
  describeUnmatched,
  editDistance,
  nearestKeys,
  PathCoverage,
  unmatchedPaths,
  type CoverageSummary,
  type PathUse,
} from '../../src/crm/path-coverage.js';

const attio = (name: string, domain?: string) => ({
  id: { record_id: `r-${name}` },
  values: {
    name: [{ value: name }],
    domains: domain === undefined ? [] : [{ domain }],
  },
});

function cover(uses: PathUse[], rows: Record<string, unknown>[], limit?: number) {
  const c = new PathCoverage(uses, limit);
  for (const r of rows) c.observe(r);
  return c.summary();
}

function hintFor(ref: string, rows: Record<string, unknown>[]): string | undefined {
  const s = cover([{ field: 'fields.x', refs: [ref], required: false }], rows);
  return s.uses[0]!.refs[0]!.hint;
}

describe('PathCoverage', () => {
  it('does not check paths against rows a skip rule skips; they count towards the limit', () => {
    const email = [{ field: 'fields.email', refs: ['data.email'], required: true }];
    const org = (id: number) => ({ data: { id, is_organization: true, name: `Org ${id}` } });
    const person = (id: number) => ({
      data: { id, is_organization: false, email: `p${id}@example.com` },
    });
    const skips = (r: Record<string, unknown>) =>
      (r.data as { is_organization?: boolean }).is_organization === true;
    const run = (rows: Record<string, unknown>[], limit?: number) => {
      const c = new PathCoverage(email, limit);
      for (const r of rows) c.observe(r, skips(r));
      return c.summary();
    };
    // Only organizations: nothing to check, the run may go on.
    const orgsOnly = run([org(1), org(2)]);
    expect(orgsOnly).toMatchObject({ rows: 2, skipped: 2, partial: false });
    expect(unmatchedPaths(orgsOnly)).toEqual([]);
    expect(checkPathCoverage(orgsOnly)).toEqual({ ok: true });
    // A person among them carries the path.
    expect(checkPathCoverage(run([org(1), person(2), org(3)]))).toEqual({ ok: true });
    // People without it still stop the run, and the message says how many were skipped.
    const typo = run([org(1), { data: { id: 2, is_organization: false } }, org(3)]);
    expect(typo).toMatchObject({ rows: 3, skipped: 2 });
    expect(describeUnmatched(unmatchedPaths(typo)[0]!, typo)).toBe(
      'fields.email: data.email found nothing in all 3 rows (2 skipped by a skip rule): no key "email" in data (keys there: id, is_organization)',
    );
    expect(checkPathCoverage(typo).ok).toBe(false);
    // Skipped rows count towards the limit: the check does not read on for ever.
    expect(run([org(1), org(2), person(3)], 2)).toMatchObject({
      rows: 2,
      skipped: 2,
      partial: true,
    });
  });

  it('counts, per reference, the rows where it found a value', () => {
    const s = cover(
      [
        { field: 'fields.name', refs: ['values.name[0].value'], required: true },
        { field: 'fields.website', refs: ['values.domains[0].domain'], required: false },
        { field: 'fields.external_id', refs: ['id.record_id'], required: true },
      ],
      [attio('Acme', 'acme.com'), attio('Globex'), attio('Initech', 'initech.com')],
    );
    expect(s).toEqual({
      rows: 3,
      partial: false,
      uses: [
        { field: 'fields.name', required: true, refs: [{ ref: 'values.name[0].value', rows: 3 }] },
        {
          field: 'fields.website',
          required: false,
          refs: [{ ref: 'values.domains[0].domain', rows: 2 }],
        },
        { field: 'fields.external_id', required: true, refs: [{ ref: 'id.record_id', rows: 3 }] },
      ],
    });
    expect(unmatchedPaths(s)).toEqual([]);
  });

  it('looks at no more rows than its limit', () => {
    const rows = Array.from({ length: 5 }, (_, i) => (i < 3 ? { a: '1' } : { b: '1' }));
    const s = cover([{ field: 'fields.name', refs: ['b'], required: true }], rows, 3);
    expect(s.rows).toBe(3);
    expect(s.partial).toBe(true);
    expect(s.uses[0]!.refs[0]!.rows).toBe(0);
  });

  it('does not count a record that is not an object', () => {
    const s = cover(
      [{ field: 'fields.name', refs: ['a'], required: true }],
      [
        null as unknown as Record<string, unknown>,
        [1] as unknown as Record<string, unknown>,
        { a: 1 },
      ],
    );
    expect(s.rows).toBe(1);
    expect(s.uses[0]!.refs[0]!.rows).toBe(1);
  });

  it('counts a JSON null or false as found: the key is there', () => {
    const s = cover(
      [{ field: 'fields.website', refs: ['website'], required: false }],
      [{ website: false }, { website: null }],
    );
    expect(s.uses[0]!.refs[0]!.rows).toBe(2);
  });

  it('names the nearest keys where the path stopped', () => {
    expect(hintFor('values.nmae[0].value', [attio('A'), attio('B', 'b.com')])).toBe(
      'no key "nmae" in values (nearest: name)',
    );
    expect(hintFor('Compnay name', [{ 'Record ID': '1', 'Company name': 'A', Phone: '' }])).toBe(
      'no column "Compnay name" (nearest: Company name)',
    );
    expect(hintFor('valeus.name', [attio('A')])).toBe('no column "valeus" (nearest: values)');
    expect(hintFor('values.domain[0].domain', [attio('A')])).toBe(
      'no key "domain" in values (nearest: domains)',
    );
  });

  it('lists some keys when none is near', () => {
    expect(hintFor('zzz', [{ a: 1, b: 2, c: 3, d: 4, e: 5, f: 6 }])).toBe(
      'no column "zzz" (keys there: a, b, c, d, e, …)',
    );
  });

  it('gathers keys from every shape of row, in turn and again', () => {
    // Rows alternate two key sets, then the first comes back: each set's keys count once.
    const rows = [{ alpha: 1 }, { omega: 2 }, { alpha: 3 }, { zeta: 4, eta: 5 }];
    expect(hintFor('alpah', rows)).toBe('no column "alpah" (nearest: alpha)');
    expect(hintFor('omeag', rows)).toBe('no column "omeag" (nearest: omega)');
    expect(hintFor('zeat', rows)).toBe('no column "zeat" (nearest: zeta)');
    // A miss that gets deeper starts the keys again, from the rows it reached,
    // even when they are the keys the shallower miss saw.
    const deeper = [{ emial: 'a@x.io' }, { data: { emial: 'b@x.io' } }];
    expect(hintFor('data.email', deeper)).toBe('no key "email" in data (nearest: emial)');
  });

  it('says when a list was taken for an object, or an index is beyond every list', () => {
    expect(hintFor('values.name.value', [attio('A')])).toBe(
      'values.name is a list: write values.name[0].value for the first item or values.name[*].value for all',
    );
    expect(hintFor('values.name[2].value', [attio('A')])).toBe('values.name has at most 1 item');
  });

  it('says when a value is not an object, is null, or a cell is not JSON', () => {
    expect(hintFor('name.first', [{ name: 5 }])).toBe('name is a number, not an object');
    expect(hintFor('name.first', [{ name: 'Acme' }])).toBe(
      'column "name" holds text that is not JSON',
    );
    expect(hintFor('owner_id.name', [{ owner_id: null }])).toBe('owner_id is null, not an object');
    expect(hintFor('properties.name', [{ properties: 'Acme' }])).toBe(
      'column "properties" holds text that is not JSON',
    );
  });

  it('adds why a text with brackets was not read as a path', () => {
    expect(hintFor('values[name]', [{ values: {} }])).toMatch(
      /^no column "values\[name\]" \(nearest: values\) \(not read as a path: \[name\] at character 7/,
    );
  });
});

describe('nearestKeys', () => {
  it('takes a small edit distance or one inside the other, closest first, at most three', () => {
    expect(nearestKeys('name', ['Name', 'names', 'nme', 'domain', 'full_name'])).toEqual([
      'Name',
      'names',
      'nme',
    ]);
    expect(nearestKeys('domain', ['domains', 'domain_name', 'website'])).toEqual([
      'domains',
      'domain_name',
    ]);
    expect(nearestKeys('nmae', ['name', 'mane'])).toEqual(['name']);
    expect(nearestKeys('Company name', ['Record ID', 'Name', 'Company Domain Name'])).toEqual([
      'Name',
    ]);
    // Two letters: neither a prefix match nor two edits away.
    expect(nearestKeys('id', ['identity', 'uuid'])).toEqual([]);
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('nmae', 'name')).toBe(1);
    expect(editDistance('', 'abc')).toBe(3);
  });
});

describe('checkPathCoverage', () => {
  const summary = (refs: { ref: string; rows: number; hint?: string }[][], rows = 1000) =>
    ({
      rows,
      partial: rows === 1000,
      uses: refs.map((r, i) => ({ field: `fields.f${i}`, required: i === 0, refs: r })),
    }) satisfies CoverageSummary;

  it('lets a run go on when every required field found something', () => {
    expect(
      checkPathCoverage(
        summary([[{ ref: 'a', rows: 10 }], [{ ref: 'b', rows: 0, hint: 'no column "b"' }]]),
      ),
    ).toEqual({ ok: true });
  });

  it('stops on a required field none of whose references found anything, naming path and hint', () => {
    const v = checkPathCoverage(
      summary([
        [{ ref: 'values.nme[0].value', rows: 0, hint: 'no key "nme" in values (nearest: name)' }],
        [{ ref: 'b', rows: 3 }],
      ]),
    );
    expect(v).toEqual({
      ok: false,
      reason:
        'required fields.f0: values.nme[0].value found nothing in the first 1,000 rows: ' +
        'no key "nme" in values (nearest: name): every row would lack it; ' +
        "fix the mapping's path, or run with --force to sync anyway",
    });
  });

  it('is satisfied by any one reference of a from list, and says "all N rows" for a short export', () => {
    expect(
      checkPathCoverage(
        summary([
          [
            { ref: 'A', rows: 0, hint: '' },
            { ref: 'B', rows: 5 },
          ],
        ]),
      ),
    ).toEqual({ ok: true });
    const v = checkPathCoverage(
      summary(
        [
          [
            { ref: 'A', rows: 0, hint: 'no column "A"' },
            { ref: 'B', rows: 0, hint: 'no column "B"' },
          ],
        ],
        12,
      ),
    );
    expect(v.ok).toBe(false);
    if (!v.ok)
      expect(v.reason).toMatch(
        /^required fields\.f0: A found nothing in all 12 rows: no column "A"; fields\.f0: B found nothing in all 12 rows: no column "B": every row/,
      );
  });

  it('says nothing about an export with no rows', () => {
    expect(checkPathCoverage(summary([[{ ref: 'a', rows: 0 }]], 0))).toEqual({ ok: true });
  });
});
