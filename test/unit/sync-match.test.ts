import { describe, expect, it } from 'vitest';
import { foreignRecordReason, foundByExternalId, strongestMatch } from '../../src/sync/match.js';
import { planRecord } from '../../src/sync/plan.js';

describe('strongestMatch', () => {
  const keys = ['x:odoo:1', 'a:A1', 'c:1'];

  it('takes the strongest key that our state or the listing knows, our state first for a key', () => {
    expect(strongestMatch(keys, [], [])).toBeUndefined();
    expect(strongestMatch(keys, [undefined, undefined, 101], [])).toEqual({
      platformId: 101,
      key: 'c:1',
    });
    // The listing names the row's external_id: stronger than our state's crm_company_id.
    expect(strongestMatch(keys, [undefined, undefined, 101], [303, undefined, 101])).toEqual({
      platformId: 303,
      key: 'x:odoo:1',
    });
    expect(strongestMatch(keys, [7, undefined, undefined], [8, undefined, undefined])).toEqual({
      platformId: 7,
      key: 'x:odoo:1',
    });
  });
});

describe('foundByExternalId', () => {
  it("is the row's own record when found through its external_id, or when nothing says how", () => {
    expect(foundByExternalId(['x:E1', 'c:1'], 'x:E1')).toBe(true);
    expect(foundByExternalId(['x:E1', 'c:1'], undefined)).toBe(true);
    expect(foundByExternalId(['x:E1', 'c:1'], 'c:1')).toBe(false);
    expect(foundByExternalId(['c:1'], undefined)).toBe(false);
    expect(foundByExternalId([], undefined)).toBe(true);
  });
});

describe('foreignRecordReason', () => {
  const keys = ['x:odoo:res.partner:1', 'c:1'];

  it('lets a row reach any record through its own external_id', () => {
    expect(
      foreignRecordReason('companies', keys, {
        platformId: 4,
        matchedBy: 'x:odoo:res.partner:1',
        writtenBy: 'pipedrive',
        remote: { external_id: 'odoo:res.partner:1' },
      }),
    ).toBeUndefined();
  });

  it('refuses a record another job wrote, found through a weaker key', () => {
    expect(
      foreignRecordReason('companies', keys, { platformId: 4, matchedBy: 'c:1', writtenBy: 'pd' }),
    ).toBe(
      'platform record 4 was written by job "pd" (found through crm_company_id "1", not through ' +
        'this row\'s external_id "odoo:res.partner:1"); left untouched: two jobs share a record only through the same external_id',
    );
    // The record's own external_id differs too: both are named.
    expect(
      foreignRecordReason('companies', keys, {
        platformId: 4,
        matchedBy: 'c:1',
        writtenBy: 'pd',
        remote: { external_id: 'pipedrive:org:1' },
      }),
    ).toBe(
      'platform record 4 was written by job "pd" (found through crm_company_id "1", its ' +
        'external_id is "pipedrive:org:1" and this row\'s "odoo:res.partner:1"); left untouched: ' +
        'two jobs share a record only through the same external_id',
    );
    // A row without external_id: its strongest key is weaker than any external_id.
    expect(foreignRecordReason('companies', ['c:1'], { platformId: 4, writtenBy: 'pd' })).toContain(
      'written by job "pd" (found through crm_company_id "1"); left untouched',
    );
    // The record's external_id named only beside one of the row's that differs.
    const remote = { external_id: 'pipedrive:org:1' };
    expect(
      foreignRecordReason('companies', ['c:1'], { platformId: 4, writtenBy: 'pd', remote }),
    ).toContain('(found through crm_company_id "1"); left untouched');
    const same = { external_id: 'odoo:res.partner:1' };
    expect(
      foreignRecordReason('companies', keys, {
        platformId: 4,
        matchedBy: 'c:1',
        writtenBy: 'pd',
        remote: same,
      }),
    ).toContain('(found through crm_company_id "1", not through this row\'s external_id');
  });

  it('refuses a record whose external_id differs, and adopts one without', () => {
    const hand = { platformId: 9, matchedBy: 'c:1' };
    expect(
      foreignRecordReason('companies', keys, { ...hand, remote: { external_id: ' sf:001 ' } }),
    ).toBe(
      'platform record 9 has external_id "sf:001" and this row "odoo:res.partner:1" ' +
        '(found through crm_company_id "1"); left untouched: they are different records',
    );
    expect(
      foreignRecordReason('companies', keys, { ...hand, remote: { external_id: '' } }),
    ).toBeUndefined();
    expect(
      foreignRecordReason('companies', keys, { ...hand, remote: { external_id: null } }),
    ).toBeUndefined();
    expect(foreignRecordReason('companies', keys, hand)).toBeUndefined();
    // Found through a weaker key, but carrying this row's external_id: the row's own record.
    expect(
      foreignRecordReason('companies', keys, {
        ...hand,
        remote: { external_id: ' odoo:res.partner:1 ' },
      }),
    ).toBeUndefined();
    // A row with no external_id contradicts no one's.
    expect(
      foreignRecordReason('companies', ['c:1'], { ...hand, remote: { external_id: 'sf:001' } }),
    ).toBeUndefined();
  });

  it('applies to members found by e-mail', () => {
    expect(
      foreignRecordReason('members', ['x:hubspot:owner:5', 'e:ann@example.com'], {
        platformId: 3,
        matchedBy: 'e:ann@example.com',
        remote: { external_id: 'salesforce:user:005A' },
      }),
    ).toContain('found through email "ann@example.com"');
  });
});

describe("planRecord: another source's record", () => {
  const body = { external_id: 'odoo:res.partner:1', crm_company_id: 1, name: 'Odoo' };
  const input = { line: 7, body, keys: ['x:odoo:res.partner:1', 'c:1'], hash: 'h' };

  it('is a conflict that names the record, neither an update nor an adoption', () => {
    for (const remote of [{ ...body, external_id: 'pd:1' }, { external_id: 'pd:1' }]) {
      const a = planRecord(
        input,
        { platformId: 4, matchedBy: 'c:1', remote },
        { entity: 'companies' },
      );
      expect(a).toMatchObject({ kind: 'conflict', line: 7, identity: 'c:1', otherLines: [] });
    }
    const owned = planRecord(
      input,
      { platformId: 4, matchedBy: 'c:1', storedHash: 'h', writtenBy: 'pd' },
      { entity: 'companies' },
    );
    expect(owned.kind).toBe('conflict');
  });

  it('waits for a pending create first, and updates a record of its own', () => {
    const pending = { runId: 'r', since: 1 };
    expect(
      planRecord(
        input,
        { platformId: 4, matchedBy: 'c:1', writtenBy: 'pd', pending },
        {
          entity: 'companies',
        },
      ).kind,
    ).toBe('pending');
    expect(
      planRecord(
        input,
        { platformId: 4, matchedBy: 'x:odoo:res.partner:1', writtenBy: 'pd' },
        {
          entity: 'companies',
        },
      ).kind,
    ).toBe('update');
  });
});
