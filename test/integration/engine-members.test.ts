/**
 * Members have POST and GET only in the platform's API: a changed member is
 * reported as unsupported (never silently dropped, never marked synced)
 * unless the job opts in to PUT /members/{id} and the platform serves it.
 */
import { describe, expect, it } from 'vitest';
import {
  countRequests,
  countWrites,
  expectedMember,
  memberRows,
  salesforceUserCells,
  SALESFORCE_USER_HEADER,
  statsSince,
  useEngines,
  type EngineHarness,
  type MemberRow,
} from '../harness/engine.js';

const engine = useEngines();

async function firstSync(
  h: EngineHarness,
  membersUpdate: 'report' | 'put',
): Promise<{ rows: MemberRow[]; edited: MemberRow[] }> {
  const rows = memberRows(20);
  const path = h.writeCsv('users.csv', SALESFORCE_USER_HEADER, rows.map(salesforceUserCells));
  h.writeJob('users', {
    entity: 'members',
    source: { path },
    mapping: 'salesforce-users',
    membersUpdate,
  });
  const first = await h.runJob('users');
  expect(first.counts).toMatchObject({ read: 20, created: 20 });
  const edited = rows.map((r, i) => (i === 3 || i === 12 ? { ...r, first: `Renamed${i}` } : r));
  h.writeCsv('users.csv', SALESFORCE_USER_HEADER, edited.map(salesforceUserCells));
  return { rows, edited };
}

describe('engine: member updates', () => {
  it('reports a changed member as unsupported, run after run, without a write', async () => {
    const h = await engine();
    const { rows } = await firstSync(h, 'report');
    for (let round = 0; round < 2; round++) {
      const before = await h.stats();
      const run = await h.runJob('users');
      expect(run.status).toBe('completed');
      expect(run.counts).toMatchObject({ read: 20, unchanged: 18, unsupported: 2, updated: 0 });
      expect(countWrites(statsSince(before, await h.stats()))).toBe(0);
      const failures = await h.failures(run.id);
      expect(failures.map((f) => f.line)).toEqual([5, 14]);
      for (const f of failures) {
        expect(f).toMatchObject({
          kind: 'unsupported',
          reason: 'update not supported by the platform API',
        });
      }
    }
    const members = (await h.dump()).members;
    expect(members.find((m) => m.external_id === `salesforce:${rows[3]!.id}`)).toMatchObject(
      expectedMember(rows[3]!),
    );
  });

  it('updates a changed member with PUT /members/{id} when the job opts in', async () => {
    const h = await engine({ sandbox: { extensions: ['members-put'] } });
    const { edited } = await firstSync(h, 'put');
    const before = await h.stats();
    const run = await h.runJob('users');
    expect(run.status).toBe('completed');
    expect(run.counts).toMatchObject({ read: 20, unchanged: 18, updated: 2, unsupported: 0 });
    const during = statsSince(before, await h.stats());
    expect(countRequests(during, 'PUT', '/members/{id}', 200)).toBe(2);
    expect(countWrites(during)).toBe(2);
    const members = (await h.dump()).members;
    expect(members).toHaveLength(20);
    for (const r of edited) {
      expect(members.filter((m) => m.external_id === `salesforce:${r.id}`)).toEqual([
        expect.objectContaining(expectedMember(r)),
      ]);
    }
    const again = await h.runJob('users');
    expect(again.counts).toMatchObject({ unchanged: 20, updated: 0 });
  });

  it('records the refusal when the job opts in but the platform has no PUT /members/{id}', async () => {
    const h = await engine();
    await firstSync(h, 'put');
    const run = await h.runJob('users');
    expect(run.status).toBe('completed');
    expect(run.counts).toMatchObject({ unchanged: 18, updated: 0, rejected: 2 });
    const failures = await h.failures(run.id);
    expect(failures).toHaveLength(2);
    for (const f of failures) {
      expect(f.kind).toBe('rejected');
      expect(f.reason).toMatch(/405.*not allowed/);
    }
    expect(countRequests(await h.stats(), 'PUT', '/members/{id}', 405)).toBe(2);
  });
});
