/**
 * A job's `skip` turns skip rules of its mapping (a preset's or its own) off
 * by name; an unknown name is a problem naming the rules the mapping has.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { JobError, loadJob, loadJobs } from '../../src/jobs/definition.js';

const root = mkdtempSync(join(tmpdir(), 'crm-sync-job-skip-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const accounts = {
  name: 'sf-accounts',
  version: 3,
  entity: 'companies',
  skip: {
    deleted: { from: 'IsDeleted', transforms: ['boolean'], equals: true, reason: 'deleted' },
    merged: { from: 'MasterRecordId', present: true, reason: 'merged' },
  },
  fields: {
    external_id: { template: 'sf:{Id}', required: true },
    name: { from: 'Name', required: true },
  },
};

let n = 0;
/** A jobs folder with one job `j`, and a mappings folder holding the `sf-accounts` preset. */
function setup(job: Record<string, unknown>): { dir: string; mappingsDir: string } {
  const dir = join(root, `case-${n++}`);
  const mappingsDir = join(dir, 'mappings');
  mkdirSync(mappingsDir, { recursive: true });
  writeFileSync(join(mappingsDir, 'sf-accounts.yaml'), stringify(accounts));
  writeFileSync(
    join(dir, 'j.yaml'),
    stringify({ entity: 'companies', source: { path: 'a.csv' }, ...job }),
  );
  return { dir, mappingsDir };
}

const row = (record: Record<string, unknown>) => ({ line: 2, record });
const merged = { Id: '1', Name: 'Acme', IsDeleted: 'false', MasterRecordId: '001x' };

describe('a job turning skip rules off', () => {
  it('keeps every rule of the preset by default', () => {
    const { dir, mappingsDir } = setup({ mapping: 'sf-accounts' });
    const job = loadJob(dir, 'j', { mappingsDir });
    expect(job.mapping.skipRules).toEqual(['deleted', 'merged']);
    expect(job.mapping.map(row(merged))).toMatchObject({ ok: false, skip: true, rule: 'merged' });
  });

  it('turns a preset rule off by name; true keeps one', () => {
    const { dir, mappingsDir } = setup({
      mapping: 'sf-accounts',
      skip: { merged: false, deleted: true },
    });
    const job = loadJob(dir, 'j', { mappingsDir });
    expect(job.mapping.skipRules).toEqual(['deleted']);
    expect(job.mapping.map(row(merged))).toMatchObject({ ok: true, body: { external_id: 'sf:1' } });
    expect(job.mapping.map(row({ ...merged, IsDeleted: 'true' }))).toMatchObject({
      rule: 'deleted',
    });
    expect(job.mapping.fingerprint).toBe('sf-accounts@3');
  });

  it('turns a rule of an inline mapping off', () => {
    const { dir } = setup({ mapping: accounts, skip: { deleted: false } });
    expect(loadJob(dir, 'j').mapping.skipRules).toEqual(['merged']);
  });

  it('names the known rules for an unknown name, with the file', () => {
    const { dir, mappingsDir } = setup({ mapping: 'sf-accounts', skip: { mergd: false } });
    let problems: string[] = [];
    try {
      loadJob(dir, 'j', { mappingsDir });
    } catch (err) {
      expect(err).toBeInstanceOf(JobError);
      problems = (err as JobError).problems;
    }
    expect(problems).toEqual([
      `${join(dir, 'j.yaml')}: skip.mergd: no skip rule "mergd" in the mapping (known: deleted, merged)`,
    ]);
    expect(loadJobs(dir, { mappingsDir }).problems).toEqual(problems);
  });

  it('says so when the mapping has no skip rules, and refuses a value that is not true or false', () => {
    const { dir } = setup({ mapping: { ...accounts, skip: undefined }, skip: { archived: false } });
    const none = loadJobs(dir).problems;
    expect(none).toHaveLength(1);
    expect(none[0]).toContain('skip.archived: no skip rule "archived"');
    const bad = setup({ mapping: 'sf-accounts', skip: { merged: 'off' } });
    expect(loadJobs(bad.dir, { mappingsDir: bad.mappingsDir }).problems[0]).toMatch(
      /j\.yaml: skip\.merged: /,
    );
  });

  it("turns off a rule of a shipped preset: salesforce-users' salesforce-noreply brings the real Salesforce Mobile Apps user back", () => {
    const real = join(import.meta.dirname, '..', 'fixtures', 'real', 'salesforce');
    const rows = parse(readFileSync(join(real, 'users-org-export.csv')), {
      columns: true,
    }) as Record<string, string>[];
    const mobile = rows.find((r) => r.Name === 'Salesforce Mobile Apps')!;
    expect(mobile.Email).toBe('noreply@salesforce.com');
    const kept = setup({ entity: 'members', mapping: 'salesforce-users' });
    const byDefault = loadJob(kept.dir, 'j', { mappingsDir: kept.mappingsDir }).mapping;
    expect(byDefault.map(row(mobile))).toMatchObject({ skip: true, rule: 'salesforce-noreply' });

    const off = setup({
      entity: 'members',
      mapping: 'salesforce-users',
      skip: { 'salesforce-noreply': false },
    });
    const job = loadJob(off.dir, 'j', { mappingsDir: off.mappingsDir });
    expect(job.mapping.skipRules).toEqual(
      byDefault.skipRules.filter((r) => r !== 'salesforce-noreply'),
    );
    expect(job.mapping.map(row(mobile))).toMatchObject({
      ok: true,
      body: { external_id: `salesforce:${mobile.Id}`, email: 'noreply@salesforce.com' },
    });
    // The other rules of the preset still skip their rows.
    const automated = rows.find((r) => r.Name === 'Automated Process')!;
    expect(job.mapping.map(row(automated))).toMatchObject({ skip: true, rule: 'internal-email' });
  });

  it('reports an invalid pattern of a mapping when the job is loaded, naming the file, rule and path', () => {
    const bad = {
      ...accounts,
      skip: { robots: { from: 'Owner.Email', matches: 'noreply@(salesforce', reason: 'robot' } },
    };
    const { dir } = setup({ mapping: bad });
    const problems = loadJobs(dir).problems;
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain(
      `${join(dir, 'j.yaml')}: mapping.skip.robots.matches: not a valid regular expression (JavaScript syntax): `,
    );
    expect(problems[0]).toMatch(/\(testing Owner\.Email\)$/);
  });
});
