import { describe, expect, it } from 'vitest';
import { auditListing, type AuditRecord, type StateView } from '../../src/sync/audit.js';
import { identityKeysOfPlatformRecord, type Entity } from '../../src/sync/identity.js';

/** A listed record as the audit reads it, from platform fields. */
function listed(
  entity: Entity,
  id: number,
  fields: Record<string, unknown>,
  createdBy?: string,
): AuditRecord {
  return {
    id,
    keys: identityKeysOfPlatformRecord(entity, fields),
    ...(createdBy !== undefined && { createdBy }),
  };
}

function stateOf(ids: Record<string, number>, pending: Record<string, string> = {}): StateView {
  return { idOf: (k) => ids[k], pendingRunOf: (k) => pending[k] };
}

describe('auditListing', () => {
  it('finds nothing in a listing our state tracks record by record', () => {
    const records = [
      listed('companies', 1, { external_id: 'hs:1', crm_company_id: 1 }),
      listed('companies', 2, { external_id: 'hs:2', crm_company_id: 2 }),
    ];
    const report = auditListing(
      'companies',
      records,
      stateOf({ 'x:hs:1': 1, 'c:1': 1, 'x:hs:2': 2, 'c:2': 2 }),
    );
    expect(report).toEqual({
      entity: 'companies',
      listed: 2,
      tracked: 2,
      withoutIdentity: 0,
      shared: [],
      untracked: [],
      problems: 0,
    });
  });

  it('reports a create sent twice: the shared identities, and the copy our state lost', () => {
    // Record 7 is the first create (its claim and commit lost), 9 the second (committed).
    const records = [
      listed('companies', 9, { external_id: 'hs:5', crm_company_id: 5 }),
      listed('companies', 7, { external_id: 'hs:5', crm_company_id: 5 }),
      listed('companies', 8, { external_id: 'hs:6', crm_company_id: 6 }),
    ];
    const report = auditListing(
      'companies',
      records,
      stateOf({ 'x:hs:5': 9, 'c:5': 9, 'x:hs:6': 8, 'c:6': 8 }),
    );
    expect(report.shared).toEqual([
      {
        key: 'c:5',
        field: 'crm_company_id',
        value: '5',
        platformIds: [7, 9],
        stateId: 9,
        problem: true,
      },
      {
        key: 'x:hs:5',
        field: 'external_id',
        value: 'hs:5',
        platformIds: [7, 9],
        stateId: 9,
        problem: true,
      },
    ]);
    expect(report.untracked).toEqual([
      expect.objectContaining({ platformId: 7, kind: 'lost', key: 'x:hs:5', stateId: 9 }),
    ]);
    expect(report.untracked[0]!.reason).toContain('external_id "hs:5"');
    expect(report.tracked).toBe(2);
    expect(report.problems).toBe(3);
  });

  it('lists a CRM id shared by records of distinct external_ids, not as a problem', () => {
    // Two CRMs with overlapping numeric ids: the same crm_company_id, other external_ids.
    const records = [
      listed('companies', 1, { external_id: 'hubspot:1', crm_company_id: 1 }),
      listed('companies', 2, { external_id: 'pipedrive:1', crm_company_id: 1 }),
    ];
    const report = auditListing('companies', records, stateOf({ 'x:hubspot:1': 1, 'c:1': 1 }));
    expect(report.shared).toEqual([
      {
        key: 'c:1',
        field: 'crm_company_id',
        value: '1',
        platformIds: [1, 2],
        stateId: 1,
        problem: false,
      },
    ]);
    // Record 2 is another source's (different external_id): untracked, not lost.
    expect(report.untracked).toEqual([
      expect.objectContaining({ platformId: 2, kind: 'untracked', key: 'x:pipedrive:1' }),
    ]);
    expect(report.problems).toBe(0);
  });

  it('counts a shared CRM id as a problem when a record has no external_id', () => {
    const records = [
      listed('companies', 1, { external_id: 'hs:1', crm_account_id: 'A1' }),
      listed('companies', 2, { crm_account_id: 'A1' }),
    ];
    const report = auditListing('companies', records, stateOf({ 'x:hs:1': 1, 'a:A1': 1 }));
    expect(report.shared.map((s) => [s.key, s.problem])).toEqual([['a:A1', true]]);
    // Found through a weaker key with no external_id of its own: ours, lost.
    expect(report.untracked).toEqual([
      expect.objectContaining({ platformId: 2, kind: 'lost', key: 'a:A1', stateId: 1 }),
    ]);
    expect(report.problems).toBe(2);
  });

  it('tracks a record when any one of its keys maps to it', () => {
    const records = [listed('companies', 1, { external_id: 'hs:1', crm_company_id: 7 })];
    const report = auditListing('companies', records, stateOf({ 'x:hs:1': 1 }));
    expect(report.tracked).toBe(1);
    expect(report.untracked).toEqual([]);
  });

  it("tells a lost record from another source's by external_id, whatever key our state knows", () => {
    const records = [
      // Our state gives x:hs:1 to record 2, whose external_id was edited on the platform.
      listed('companies', 1, { external_id: 'hs:1' }),
      listed('companies', 2, { external_id: 'hs:1b' }),
      // Our state gives c:7 to record 9, which is not listed: nothing says it is another source's.
      listed('companies', 3, { external_id: 'hs:3', crm_company_id: 7 }),
      // Our state gives c:8 to record 5, of the same external_id: a copy.
      listed('companies', 4, { external_id: 'hs:4', crm_company_id: 8 }),
      listed('companies', 5, { external_id: 'hs:4', crm_company_id: 80 }),
    ];
    const state = stateOf({ 'x:hs:1': 2, 'c:7': 9, 'c:8': 5, 'c:80': 5 });
    const report = auditListing('companies', records, state);
    expect(report.untracked.map((u) => [u.platformId, u.kind, u.key, u.stateId])).toEqual([
      [1, 'lost', 'x:hs:1', 2],
      [3, 'lost', 'c:7', 9],
      [4, 'lost', 'c:8', 5],
      [2, 'untracked', 'x:hs:1b', undefined],
    ]);
  });

  it('lists untracked records of one kind by id, whatever the listing order', () => {
    const records = [9, 3, 5].map((id) => listed('companies', id, { external_id: `hs:${id}` }));
    const report = auditListing('companies', records, stateOf({}));
    expect(report.untracked.map((u) => u.platformId)).toEqual([3, 5, 9]);
  });

  it('tells pending creates, records our API account made, and the rest apart', () => {
    const records = [
      listed('companies', 1, { external_id: 'hs:1' }, 'crm-sync'),
      listed('companies', 2, { external_id: 'hs:2' }, 'crm-sync'),
      listed('companies', 3, { external_id: 'hs:3' }, 'someone'),
      listed('companies', 4, { name: 'no identity' }, 'crm-sync'),
    ];
    const state = stateOf({}, { 'x:hs:2': 'run-1' });
    const withMarker = auditListing('companies', records, state, { createdBy: 'crm-sync' });
    expect(withMarker.untracked.map((u) => [u.platformId, u.kind])).toEqual([
      [1, 'lost'],
      [2, 'pending'],
      [3, 'untracked'],
    ]);
    expect(withMarker.untracked[1]!.runId).toBe('run-1');
    // Each reason names what the operator acts on: the account, the run, or that none can tell.
    const [lost, pending, untracked] = withMarker.untracked.map((u) => u.reason);
    expect(lost).toContain('created by "crm-sync" (our API account)');
    expect(pending).toContain('external_id "hs:2"');
    expect(pending).toContain('by run run-1 has an unknown outcome');
    expect(untracked).toContain('created elsewhere, or by us with every trace lost');
    expect(withMarker.withoutIdentity).toBe(1);
    expect(withMarker.problems).toBe(1);
    // Without the marker our state cannot tell record 1 from one made elsewhere.
    const without = auditListing('companies', records, state);
    expect(without.untracked.map((u) => [u.platformId, u.kind])).toEqual([
      [2, 'pending'],
      [1, 'untracked'],
      [3, 'untracked'],
    ]);
    expect(without.problems).toBe(0);
  });

  it('audits members by external_id and e-mail, case-insensitively', () => {
    const records = [
      listed('members', 1, { external_id: 'sf:1', email: 'Ann@Example.com' }),
      listed('members', 2, { email: 'ann@example.com' }),
    ];
    const report = auditListing(
      'members',
      records,
      stateOf({ 'x:sf:1': 1, 'e:ann@example.com': 1 }),
    );
    expect(report.shared).toEqual([
      {
        key: 'e:ann@example.com',
        field: 'email',
        value: 'ann@example.com',
        platformIds: [1, 2],
        stateId: 1,
        problem: true,
      },
    ]);
    expect(report.untracked).toEqual([
      expect.objectContaining({ platformId: 2, kind: 'lost', key: 'e:ann@example.com' }),
    ]);
  });

  it('counts a record listed twice (a page boundary moved) once', () => {
    const record = listed('companies', 3, { external_id: 'hs:3', crm_company_id: 3 });
    const report = auditListing('companies', [record, record], stateOf({}));
    expect(report.shared).toEqual([]);
    expect(report.listed).toBe(1);
    expect(report.untracked.map((u) => u.platformId)).toEqual([3]);
  });
});
