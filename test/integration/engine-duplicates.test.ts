/**
 * Duplicates: rows of one export that claim one platform record keep one
 * survivor by the job's `duplicates` rule, and every other row is a
 * duplicate, listed with its survivor. The export is the Salesforce users of
 * test/fixtures/real/salesforce/users-rest-query.json (three users share one
 * e-mail, three another), with a LastModifiedDate written by hand on each so
 * that newest, oldest, first and last each pick another row. The first
 * group's address is the org's internal one, without a top-level domain,
 * which the e-mail transform refuses: `.example` is added to it. Real Redis,
 * the sandbox, batches of two rows (so that a survivor beats rows of
 * earlier batches). These users are Salesforce's own (the preset skips them
 * by their addresses): the jobs turn those skip rules off, so that the rows
 * reach the survivor rule.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { dryRun } from '../../src/engine/dry-run.js';
import { failurePages } from '../../src/engine/run-failures.js';
import { loadJob } from '../../src/jobs/definition.js';
import type { FailureRow } from '../../src/state/runs.js';
import { countWrites, statsSince, useEngines, type EngineHarness } from '../harness/engine.js';

const engine = useEngines();

interface SfUser {
  Id: string;
  Username: string;
  Email: string;
  FirstName: string | null;
  LastName: string;
  SystemModstamp: string;
}
const users = (
  JSON.parse(
    readFileSync(
      join(import.meta.dirname, '../fixtures/real/salesforce/users-rest-query.json'),
      'utf8',
    ),
  ) as { records: SfUser[] }
).records;

// LastModifiedDate of each fixture user, by hand. Line = index + 2 (the header is line 1).
const MODIFIED: Record<string, string> = {
  '005dM00000aYaE4QAK': '2026-05-01T07:35:37.000+0000', // line 2, noreply@00ddm…
  '005dM00000aYaE6QAK': '2026-05-03T10:00:00.000+0000', // line 3, noreply@00ddm… (newest)
  '005dM00000aYaE7QAK': '2026-04-30T09:00:00.000+0000', // line 4, noreply@00ddm… (oldest)
  '005dM00000aYf0qQAC': '2026-05-01T21:13:13.000+0000', // line 5, alone
  '005dM00000aYaE3QAK': '2026-05-01T21:13:13.000+0000', // line 6, noreply@example.com (oldest)
  '005dM00000aYaE8QAK': '2026-05-04T00:00:00.000+0000', // line 7, noreply@example.com (newest, tie)
  '005dM00000aYaE9QAK': '2026-05-04T00:00:00.000+0000', // line 8, noreply@example.com (tie: 7 is earlier)
  '005dM00000awSFJQA2': '2026-05-06T09:49:19.000+0000', // line 9, alone
};
// The preset's skip rules for Salesforce's own users, off: these rows are the test's duplicates.
const SYSTEM_USERS_KEPT = {
  skip: {
    'internal-username': false,
    'chatter-username': false,
    'internal-email': false,
    'salesforce-noreply': false,
    'placeholder-email': false,
  },
};
const HEADER = ['Id', 'Username', 'Email', 'FirstName', 'LastName', 'LastModifiedDate'];

const emailOf = (u: SfUser) => (u.Email.includes('.') ? u.Email : `${u.Email}.example`);

function cells(u: SfUser, modified = MODIFIED[u.Id]!): unknown[] {
  return [u.Id, u.Username, emailOf(u), u.FirstName ?? '', u.LastName, modified];
}

const idAt = (line: number) => users[line - 2]!.Id;
const GROUP_1 = [2, 3, 4];
const GROUP_2 = [6, 7, 8];

async function duplicates(h: EngineHarness, runId: string): Promise<FailureRow[]> {
  const out: FailureRow[] = [];
  for await (const page of failurePages(h.store, runId, 0, Infinity, 'duplicate'))
    out.push(...page);
  return out.sort((a, b) => a.line - b.line);
}

async function externalIds(h: EngineHarness): Promise<string[]> {
  return (await h.dump()).members.map((m) => String(m.external_id)).sort();
}

function expectDuplicates(rows: FailureRow[], survivors: [number, number], rule: string): void {
  const expected = [
    ...GROUP_1.filter((l) => l !== survivors[0]).map((l) => [l, survivors[0]] as const),
    ...GROUP_2.filter((l) => l !== survivors[1]).map((l) => [l, survivors[1]] as const),
  ].sort((a, b) => a[0] - b[0]);
  expect(rows.map((r) => [r.line, r.survivor?.line])).toEqual(expected);
  for (const r of rows) {
    const survivor = r.survivor!.line;
    expect(r).toMatchObject({
      kind: 'duplicate',
      record: `x:salesforce:${idAt(r.line)}`,
      identity: `e:${emailOf(users[r.line - 2]!).toLowerCase()}`,
      survivor: { line: survivor, record: `x:salesforce:${idAt(survivor)}` },
    });
    expect(r.reason).toBe(
      `duplicate of line ${survivor} (salesforce:${idAt(survivor)}), which keeps the record: ` +
        `both have email ${JSON.stringify(r.identity!.slice(2))} (${rule})`,
    );
  }
}

describe('engine: duplicates keep one survivor', () => {
  // Survivors of the two groups, worked out by hand from MODIFIED above.
  const BY = 'LastModifiedDate, SystemModstamp';
  const cases: { keep: string | undefined; survivors: [number, number]; rule: string }[] = [
    // No `duplicates` in the job: the preset's newest by LastModifiedDate.
    { keep: undefined, survivors: [3, 7], rule: `keep: newest by ${BY}` },
    { keep: 'oldest', survivors: [4, 6], rule: `keep: oldest by ${BY}` },
    { keep: 'first', survivors: [2, 6], rule: 'keep: first' },
    { keep: 'last', survivors: [4, 8], rule: 'keep: last' },
  ];
  for (const { keep, survivors, rule } of cases) {
    it(`keep ${keep ?? 'newest (the preset)'}: one member per e-mail; a second run writes nothing`, async () => {
      const h = await engine({ settings: { batchSize: 2 } });
      const path = h.writeCsv(
        'users.csv',
        HEADER,
        users.map((u) => cells(u)),
      );
      h.writeJob('users', {
        entity: 'members',
        source: { path },
        mapping: 'salesforce-users',
        ...SYSTEM_USERS_KEPT,
        ...(keep !== undefined && { duplicates: { keep } }),
      });
      // The dry run (claims in memory) keeps the same survivors.
      const plan = await dryRun({
        def: loadJob(h.jobsDir, 'users', { mappingsDir: h.config.mappingsDir }),
        req: { full: false },
        store: h.store,
        client: h.client(),
        logger: h.logger,
        env: h.config.sourceEnv,
      });
      expect(plan.counts).toMatchObject({ create: 4, duplicate: 4, conflict: 0 });
      const lines = (kind: string) =>
        plan.actions
          .filter((a) => a.kind === kind)
          .map((a) => a.line)
          .sort((a, b) => a - b);
      expect(lines('create')).toEqual([...survivors, 5, 9].sort((a, b) => a - b));
      expect(lines('duplicate')).toEqual(
        [...GROUP_1, ...GROUP_2].filter((l) => !survivors.includes(l)).sort((a, b) => a - b),
      );

      const first = await h.runJob('users');
      expect(first.status).toBe('completed');
      expect(first.counts).toMatchObject({ read: 8, created: 4, duplicates: 4, conflict: 0 });
      expect(await externalIds(h)).toEqual(
        [...survivors, 5, 9].map((l) => `salesforce:${idAt(l)}`).sort(),
      );
      expectDuplicates(await duplicates(h, first.id), survivors, rule);

      const before = await h.stats();
      const second = await h.runJob('users');
      expect(second.counts).toMatchObject({ read: 8, unchanged: 4, duplicates: 4, created: 0 });
      expect(countWrites(statsSince(before, await h.stats()))).toBe(0);
      expectDuplicates(await duplicates(h, second.id), survivors, rule);
    });
  }

  it('keep none: every row of a shared e-mail is a conflict, as without a rule', async () => {
    const h = await engine({ settings: { batchSize: 2 } });
    const path = h.writeCsv(
      'users.csv',
      HEADER,
      users.map((u) => cells(u)),
    );
    h.writeJob('users', {
      entity: 'members',
      source: { path },
      mapping: 'salesforce-users',
      ...SYSTEM_USERS_KEPT,
      duplicates: { keep: 'none' },
    });
    const run = await h.runJob('users');
    expect(run.counts).toMatchObject({ read: 8, created: 2, conflict: 6, duplicates: 0 });
    expect(await externalIds(h)).toEqual([5, 9].map((l) => `salesforce:${idAt(l)}`).sort());
    const before = await h.stats();
    const again = await h.runJob('users');
    expect(again.counts).toMatchObject({ unchanged: 2, conflict: 6 });
    expect(countWrites(statsSince(before, await h.stats()))).toBe(0);
  });

  it('the record stays with the row that holds it while that row is in the export; then the next takes over', async () => {
    const h = await engine({
      settings: { batchSize: 2 },
      sandbox: { extensions: ['members-put'] },
    });
    const group = users.slice(0, 3); // lines 2-4, one e-mail
    const path = h.writeCsv(
      'users.csv',
      HEADER,
      group.map((u) => cells(u)),
    );
    h.writeJob('users', {
      entity: 'members',
      source: { path },
      mapping: 'salesforce-users',
      ...SYSTEM_USERS_KEPT,
      membersUpdate: 'put',
    });
    // Run 1: line 3 (A) is the newest.
    const first = await h.runJob('users');
    expect(first.counts).toMatchObject({ created: 1, duplicates: 2 });
    expect(await externalIds(h)).toEqual([`salesforce:${idAt(3)}`]);

    // Line 4 (B) is edited and becomes the newest; A is still there and valid: A keeps it.
    const edited = group.map((u, i) =>
      i === 2 ? cells({ ...u, LastName: 'Renamed' }, '2026-06-01T00:00:00.000+0000') : cells(u),
    );
    h.writeCsv('users.csv', HEADER, edited);
    const before = await h.stats();
    const second = await h.runJob('users');
    expect(second.counts).toMatchObject({ unchanged: 1, duplicates: 2, updated: 0 });
    expect(countWrites(statsSince(before, await h.stats()))).toBe(0);
    expect((await duplicates(h, second.id)).map((r) => [r.line, r.survivor?.line])).toEqual([
      [2, 3],
      [4, 3],
    ]);

    // A leaves the export: B, the newest of the rest, takes the record over.
    h.writeCsv('users.csv', HEADER, [edited[0]!, edited[2]!]);
    const third = await h.runJob('users');
    expect(third.counts).toMatchObject({ updated: 1, duplicates: 1, created: 0 });
    expect((await duplicates(h, third.id)).map((r) => [r.line, r.survivor?.line])).toEqual([
      [2, 3],
    ]);
    const members = (await h.dump()).members;
    expect(members).toHaveLength(1);
    expect(members[0]).toMatchObject({
      external_id: `salesforce:${idAt(4)}`,
      last_name: 'Renamed',
    });
  });
});
