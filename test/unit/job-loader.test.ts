import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { builtinMappingsDir } from '../../src/crm/presets.js';
import { listJobs } from '../../src/engine/job-service.js';
import { JobError, loadJobs } from '../../src/jobs/definition.js';
import { cachedJobLoader, preloadJobs, type JobLoader } from '../../src/jobs/job-loader.js';

const root = mkdtempSync(join(tmpdir(), 'crm-sync-job-loader-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let n = 0;
/** A fresh jobs folder and mappings folder; the jobs folder holds the given files. */
function folders(files: Record<string, string>): { jobs: string; mappings: string } {
  const base = join(root, `case-${n++}`);
  const jobs = join(base, 'jobs');
  const mappings = join(base, 'mappings');
  mkdirSync(jobs, { recursive: true });
  mkdirSync(mappings, { recursive: true });
  for (const [name, text] of Object.entries(files)) writeFileSync(join(jobs, name), text);
  return { jobs, mappings };
}

const job = (mapping: string, extra = ''): string =>
  `entity: companies\nsource: { path: export.csv }\nmapping: ${mapping}\n${extra}`;

const inline = (column: string): string =>
  [
    '{ name: inline-test, version: 1, entity: companies, fields: {',
    `crm_company_id: { from: ${column} }, crm_account_id: { from: Account },`,
    'external_id: { from: Id }, name: { from: Name } } }',
  ].join(' ');

/** The built-in HubSpot preset with its version changed: a user's override of it. */
const hubspotAt = (version: number): string =>
  readFileSync(join(builtinMappingsDir, 'hubspot-companies.yaml'), 'utf8').replace(
    /^version: 1$/m,
    `version: ${version}`,
  );

/** Sets a file's modification time (an edit that keeps the size): a second later than it was. */
function touchLater(file: string): void {
  const { atime, mtime } = statSync(file);
  utimesSync(file, atime, new Date(mtime.getTime() + 1_000));
}

describe('cachedJobLoader', () => {
  it('answers the definition it read while the job file and its preset are unchanged', () => {
    const { jobs, mappings } = folders({ 'nightly.yaml': job('hubspot-companies') });
    const load = cachedJobLoader(jobs, { mappingsDir: mappings });
    const first = load('nightly');
    expect(first.mapping.fingerprint).toBe('hubspot-companies@1');
    expect(load('nightly')).toBe(first);
    expect(load('nightly')).toBe(first);
  });

  it('reads the job again after its file changed, in content or only in its times', () => {
    const { jobs, mappings } = folders({ 'nightly.yaml': job('hubspot-companies') });
    const load = cachedJobLoader(jobs, { mappingsDir: mappings });
    const first = load('nightly');
    writeFileSync(join(jobs, 'nightly.yaml'), job('hubspot-companies', 'priority: 3\n'));
    const edited = load('nightly');
    expect(edited.priority).toBe(3);
    // The same bytes written again: the times alone say the file may have changed.
    touchLater(join(jobs, 'nightly.yaml'));
    const touched = load('nightly');
    expect(touched).not.toBe(edited);
    expect(touched.priority).toBe(3);
    expect(first.priority).toBe(1);
  });

  it('reads an inline mapping again when the job file changes', () => {
    const { jobs } = folders({ 'inline.yaml': job(inline('Company')) });
    const load = cachedJobLoader(jobs);
    const first = load('inline');
    expect(load('inline')).toBe(first);
    writeFileSync(join(jobs, 'inline.yaml'), job(inline('Firma')));
    const edited = load('inline');
    expect(edited).not.toBe(first);
    expect(edited.mapping.paths.flatMap((p) => p.refs)).toContain('Firma');
    expect(first.mapping.paths.flatMap((p) => p.refs)).toContain('Company');
  });

  it('follows its preset: an override added, edited and removed', () => {
    const { jobs, mappings } = folders({ 'nightly.yaml': job('hubspot-companies') });
    const load = cachedJobLoader(jobs, { mappingsDir: mappings });
    expect(load('nightly').mapping.fingerprint).toBe('hubspot-companies@1');
    // A preset of the same name in the mappings folder shadows the built-in one.
    writeFileSync(join(mappings, 'hubspot-companies.yml'), hubspotAt(7));
    expect(load('nightly').mapping.fingerprint).toBe('hubspot-companies@7');
    writeFileSync(join(mappings, 'hubspot-companies.yml'), hubspotAt(8));
    const edited = load('nightly');
    expect(edited.mapping.fingerprint).toBe('hubspot-companies@8');
    expect(load('nightly')).toBe(edited);
    unlinkSync(join(mappings, 'hubspot-companies.yml'));
    expect(load('nightly').mapping.fingerprint).toBe('hubspot-companies@1');
  });

  it('sees a second definition of the job appear, and the job disappear', () => {
    const { jobs } = folders({ 'nightly.yaml': job('hubspot-companies') });
    const load = cachedJobLoader(jobs);
    load('nightly');
    writeFileSync(join(jobs, 'nightly.yml'), job('hubspot-companies'));
    expect(() => load('nightly')).toThrow(/defined twice/);
    unlinkSync(join(jobs, 'nightly.yml'));
    unlinkSync(join(jobs, 'nightly.yaml'));
    expect(() => load('nightly')).toThrow(JobError);
    expect(() => load('nightly')).toThrow(/no job "nightly"/);
  });

  it('follows the job file renamed from .yaml to .yml', () => {
    const { jobs } = folders({ 'nightly.yaml': job('hubspot-companies') });
    const load = cachedJobLoader(jobs);
    expect(load('nightly').file).toBe(join(jobs, 'nightly.yaml'));
    renameSync(join(jobs, 'nightly.yaml'), join(jobs, 'nightly.yml'));
    expect(load('nightly').file).toBe(join(jobs, 'nightly.yml'));
  });

  it('keeps no job that failed to load: once mended, it loads', () => {
    const { jobs } = folders({ 'broken.yaml': 'entity: companies\nsource: [\n' });
    const load = cachedJobLoader(jobs);
    expect(() => load('broken')).toThrow(JobError);
    expect(() => load('broken')).toThrow(JobError);
    writeFileSync(join(jobs, 'broken.yaml'), job('hubspot-companies'));
    expect(load('broken').mappingRef).toBe('hubspot-companies');
  });
});

describe('preloadJobs', () => {
  it('loads every job of the folder, keeps those that load and answers the others', () => {
    const { jobs, mappings } = folders({
      'nightly.yaml': job('hubspot-companies'),
      'broken.yml': 'entity: companies\nsource: [\n',
      'notes.txt': 'not a job',
    });
    const load = cachedJobLoader(jobs, { mappingsDir: mappings });
    const asked: string[] = [];
    const read = new Map<string, unknown>();
    const problems = preloadJobs((name) => {
      asked.push(name);
      const def = load(name);
      read.set(name, def);
      return def;
    }, jobs);
    expect(asked).toEqual(['broken', 'nightly']);
    expect(problems).toHaveLength(1);
    expect(problems[0]!.job).toBe('broken');
    expect(problems[0]!.problems.join('\n')).toContain(join(jobs, 'broken.yml'));
    // What a run loads next is the definition read then.
    expect(load('nightly')).toBe(read.get('nightly'));
  });

  it('loads nothing from a folder that does not exist', () => {
    expect(preloadJobs(() => expect.unreachable(), join(root, 'no-such-folder'))).toEqual([]);
  });
});

describe('the jobs list (GET /api/jobs) through the loader', () => {
  const store = { runs: { list: () => Promise.resolve([]) } };
  const listOf = (jobs: string, loadJob: JobLoader) =>
    listJobs({
      store,
      pauseOf: () => Promise.resolve(null),
      config: { jobsDir: jobs, sourceEnv: {} },
      loadJob,
    });

  it('takes every job from the process’s loader: an unchanged file is not read again', async () => {
    const { jobs, mappings } = folders({
      'nightly.yaml': job('hubspot-companies'),
      'weekly.yml': job('hubspot-companies'),
    });
    const load = cachedJobLoader(jobs, { mappingsDir: mappings });
    const kept = new Map([
      ['nightly', load('nightly')],
      ['weekly', load('weekly')],
    ]);
    const answered: unknown[] = [];
    const list = await listOf(jobs, (name) => {
      const def = load(name);
      answered.push(def);
      return def;
    });
    expect(list.jobs.map((j) => j.name)).toEqual(['nightly', 'weekly']);
    // The very definitions read before: nothing read and compiled again.
    expect(answered).toHaveLength(2);
    expect(answered[0]).toBe(kept.get('nightly'));
    expect(answered[1]).toBe(kept.get('weekly'));
  });

  it('has the problems `validate` finds, each file’s once, whichever way its jobs are read', async () => {
    const { jobs, mappings } = folders({
      'good.yaml': job('hubspot-companies'),
      'twice.yaml': job('hubspot-companies'),
      'twice.yml': job('hubspot-companies'),
      'no-mapping.yaml': 'entity: companies\nsource: { path: a.csv }\n',
      'Nightly.yaml': job('hubspot-companies'),
      'broken.yml': 'entity: companies\nsource: [\n',
    });
    const fresh = loadJobs(jobs, { mappingsDir: mappings });
    const load = cachedJobLoader(jobs, { mappingsDir: mappings });
    const list = await listOf(jobs, load);
    expect(list.jobs.map((j) => j.name)).toEqual(['good']);
    expect(list.problems).toEqual(fresh.problems);
    expect(fresh.problems).toHaveLength(4);
    expect(fresh.problems).toEqual(
      expect.arrayContaining([
        `${join(jobs, 'Nightly.yaml')}: job names (file names) use lower-case letters, digits, - and _`,
        expect.stringMatching(/^job "twice" is defined twice/),
        expect.stringContaining(join(jobs, 'no-mapping.yaml')),
        expect.stringContaining(join(jobs, 'broken.yml')),
      ]),
    );
    // A worker's start-up says the same of each.
    expect(preloadJobs(load, jobs).flatMap((p) => p.problems)).toEqual(fresh.problems);
  });
});
