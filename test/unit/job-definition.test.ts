import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { JobError, loadJob, loadJobs } from '../../src/jobs/definition.js';

const root = mkdtempSync(join(tmpdir(), 'crm-sync-jobs-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let n = 0;
/** A fresh jobs folder holding the given files. */
function jobsDir(files: Record<string, string>): string {
  const dir = join(root, `case-${n++}`);
  mkdirSync(dir, { recursive: true });
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

function problemsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(JobError);
    return (err as JobError).problems;
  }
  throw new Error('no error');
}

describe('loadJob', () => {
  it('loads a job with defaults, its preset compiled and its path resolved against the jobs folder', () => {
    const dir = jobsDir({
      'nightly.yaml': [
        'entity: companies',
        'source: { path: ../exports/hubspot.csv }',
        'mapping: hubspot-companies',
        'schedule: "0 2 * * *"',
        'timezone: Europe/Berlin',
      ].join('\n'),
    });
    const job = loadJob(dir, 'nightly');
    expect(job).toMatchObject({
      name: 'nightly',
      file: join(dir, 'nightly.yaml'),
      entity: 'companies',
      source: { path: join(dir, '..', 'exports', 'hubspot.csv') },
      mappingRef: 'hubspot-companies',
      schedule: '0 2 * * *',
      timezone: 'Europe/Berlin',
      mode: 'upsert',
      createVia: 'companies',
      membersUpdate: 'report',
      fullSnapshot: true,
      thresholds: { maxInvalidShare: 0.1, maxChangeShare: 0.5, minRows: 20 },
      indexMaxAgeHours: 24,
      priority: 1,
    });
    expect(job.mapping.fingerprint).toBe('hubspot-companies@1');
  });

  it('accepts an inline mapping and a URL source whose credentials come from the environment', () => {
    const dir = jobsDir({
      'people.yml': `
entity: members
source:
  url: "https://exports.example.com/owners.ndjson?hapikey=\${HUBSPOT_KEY}"
  format: ndjson
  headers:
    Authorization: "Bearer \${HUBSPOT_EXPORT_TOKEN}"
    Accept: application/x-ndjson
mapping:
  name: owners-inline
  version: 4
  entity: members
  fields:
    email: { from: email, transforms: [email], required: true }
membersUpdate: put
thresholds: { minRows: 0 }
`,
    });
    const job = loadJob(dir, 'people');
    expect(job.mappingRef).toBe('inline');
    expect(job.mapping.fingerprint).toBe('owners-inline@4');
    expect(job.source.headers).toEqual({
      Authorization: 'Bearer ${HUBSPOT_EXPORT_TOKEN}',
      Accept: 'application/x-ndjson',
    });
    expect(job.thresholds).toEqual({ maxInvalidShare: 0.1, maxChangeShare: 0.5, minRows: 0 });
    // The email transform keeps the address as written (identity compares it lower-cased).
    expect(job.mapping.map({ line: 2, record: { email: 'A@B.co' } })).toEqual({
      ok: true,
      line: 2,
      body: { email: 'A@B.co' },
    });
  });

  it('reports every problem of a file with its path', () => {
    const dir = jobsDir({
      'bad.yaml': `
entity: contacts
source:
  path: a.csv
  url: https://x.example/a.csv
  delimiter: ":"
mapping: hubspot-companies
schedule: "61 * * * *"
timezone: Mars/Olympus
mode: sometimes
thresholds: { maxInvalidShare: 1.5, minRows: -1, extra: 1 }
indexMaxAgeHours: 0
surprise: true
`,
    });
    const file = join(dir, 'bad.yaml');
    const p = problemsOf(() => loadJob(dir, 'bad'));
    for (const path of [
      'entity',
      'source',
      'source.delimiter',
      'schedule',
      'timezone',
      'mode',
      'thresholds.maxInvalidShare',
      'thresholds.minRows',
      'thresholds',
      'indexMaxAgeHours',
      '(top level)',
    ]) {
      expect(p, path).toEqual(
        expect.arrayContaining([
          expect.stringMatching(new RegExp(`^${file}: ${path.replace(/[.()]/g, '\\$&')}: `)),
        ]),
      );
    }
    expect(p).toContain(`${file}: schedule: not a valid cron expression`);
    expect(p).toContain(`${file}: timezone: not an IANA time zone (e.g. Europe/Berlin)`);
    expect(p).toContain(`${file}: source: give exactly one of path or url`);
  });

  it('takes a priority (the weight of its runs among the runs writing): a whole number 1 to 100', () => {
    const job = (priority: string): string =>
      `entity: companies\nsource: { path: a.csv }\nmapping: hubspot-companies\npriority: ${priority}\n`;
    const dir = jobsDir({
      'heavy.yaml': job('3'),
      'most.yaml': job('100'),
      'zero.yaml': job('0'),
      'half.yaml': job('1.5'),
      'many.yaml': job('101'),
      'word.yaml': job('high'),
    });
    expect(loadJob(dir, 'heavy').priority).toBe(3);
    expect(loadJob(dir, 'most').priority).toBe(100);
    expect(problemsOf(() => loadJob(dir, 'zero'))).toEqual([
      `${join(dir, 'zero.yaml')}: priority: at least 1`,
    ]);
    expect(problemsOf(() => loadJob(dir, 'half'))).toEqual([
      `${join(dir, 'half.yaml')}: priority: a whole number`,
    ]);
    expect(problemsOf(() => loadJob(dir, 'many'))).toEqual([
      `${join(dir, 'many.yaml')}: priority: at most 100`,
    ]);
    expect(problemsOf(() => loadJob(dir, 'word'))).toHaveLength(1);
  });

  it('refuses literal credentials in a job file', () => {
    const dir = jobsDir({
      'leaky.yaml': `
entity: companies
source:
  url: "https://user:hunter2@exports.example.com/a.csv?token=abc123"
  headers: { Authorization: "Bearer abc123", X-Api-Key: "k" }
mapping: hubspot-companies
`,
    });
    const p = problemsOf(() => loadJob(dir, 'leaky'));
    const file = join(dir, 'leaky.yaml');
    expect(p).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          new RegExp(`^${file}: source.headers.Authorization: a credential must not be written`),
        ),
        expect.stringMatching(/source\.headers\.X-Api-Key: a credential/),
        expect.stringMatching(/source\.url: must not carry credentials/),
        expect.stringMatching(/source\.url: query parameter token looks like a credential/),
      ]),
    );
    expect(p.join('\n')).not.toContain('hunter2');
  });

  it('reports mapping problems: unknown preset, inline paths, entity mismatch', () => {
    const dir = jobsDir({
      'a.yaml': 'entity: companies\nsource: { path: a.csv }\nmapping: hubspot-compnies\n',
      'b.yaml': `
entity: companies
source: { path: a.csv }
mapping:
  name: b
  version: 1
  entity: companies
  fields:
    website: { from: W, transforms: [domian] }
`,
      'c.yaml': 'entity: companies\nsource: { path: a.csv }\nmapping: hubspot-owners\n',
    });
    expect(problemsOf(() => loadJob(dir, 'a'))[0]).toMatch(
      /a\.yaml: mapping: no mapping preset "hubspot-compnies"/,
    );
    expect(problemsOf(() => loadJob(dir, 'b'))).toEqual([
      expect.stringMatching(
        /b\.yaml: mapping\.fields\.website\.transforms\[0\]: unknown transform "domian"/,
      ),
    ]);
    expect(problemsOf(() => loadJob(dir, 'c'))).toEqual([
      `${join(dir, 'c.yaml')}: mapping: hubspot-owners maps members, but the job's entity is companies`,
    ]);
  });

  it('reports a bad mapping reference and a timezone without schedule alongside other problems', () => {
    const dir = jobsDir({
      'odd.yaml':
        'entity: companies\nsource: { path: a.csv }\nmapping: Bad Name\ntimezone: UTC\nmode: x\n',
    });
    const file = join(dir, 'odd.yaml');
    expect(problemsOf(() => loadJob(dir, 'odd'))).toEqual([
      `${file}: mapping: a preset name uses lower-case letters, digits, - and _`,
      expect.stringMatching(new RegExp(`^${file}: mode: `)),
      `${file}: timezone: a timezone needs a schedule`,
    ]);
  });

  it("completes a job's duplicates rule with its preset's, and refuses newest without any by", () => {
    const job = (duplicates: string, mapping = 'salesforce-users') =>
      [
        'entity: members',
        'source: { path: users.csv }',
        `mapping: ${mapping}`,
        `duplicates: ${duplicates}`,
      ].join('\n');
    const dir = jobsDir({
      'oldest.yaml': job('{ keep: oldest }'),
      'by.yaml': job('{ by: Changed }'),
      'first.yaml': job('{ keep: first }'),
      'attio.yaml': job('{ keep: newest }', 'attio-workspace-members'),
      'preset.yaml': job('{}'),
    });
    const rule = (name: string) => {
      const d = loadJob(dir, name).mapping.duplicates;
      return { keep: d.keep, by: d.by };
    };
    // The preset's by (its modified time) with the job's keep; a job's by alone keeps the newest.
    expect(rule('oldest')).toEqual({ keep: 'oldest', by: ['LastModifiedDate', 'SystemModstamp'] });
    expect(rule('by')).toEqual({ keep: 'newest', by: ['Changed'] });
    expect(loadJob(dir, 'by').mapping.paths.filter((u) => u.field === 'duplicates.by')).toEqual([
      { field: 'duplicates.by', refs: ['Changed'], required: false },
    ]);
    expect(rule('first').keep).toBe('first');
    expect(rule('preset')).toEqual({ keep: 'newest', by: ['LastModifiedDate', 'SystemModstamp'] });
    expect(loadJob(dir, 'oldest').mapping.duplicates.rank({ SystemModstamp: '5' })).toBe(5);
    // Attio's presets have no modified time to compare.
    expect(problemsOf(() => loadJob(dir, 'attio'))).toEqual([
      `${join(dir, 'attio.yaml')}: duplicates.by: keep: newest needs by`,
    ]);
  });

  it('reports YAML syntax errors by line', () => {
    const dir = jobsDir({ 'broken.yaml': 'entity: companies\nsource: [unclosed\n' });
    expect(problemsOf(() => loadJob(dir, 'broken'))[0]).toMatch(
      /broken\.yaml: line 3, column 1: Flow sequence/,
    );
  });

  it('names the jobs it has when one is missing', () => {
    const dir = jobsDir({
      'one.yaml': 'entity: companies\nsource: { path: a.csv }\nmapping: hubspot-companies\n',
    });
    try {
      loadJob(dir, 'two');
      expect.unreachable();
    } catch (err) {
      expect((err as JobError).code).toBe('job.not-found');
      expect((err as JobError).message).toContain('(have: one)');
    }
    expect(() => loadJob(dir, '../one')).toThrow(JobError);
  });

  it('says what is wrong with a file whose name is no job name, and reads nothing by a path made of a name', () => {
    const good = 'entity: companies\nsource: { path: a.csv }\nmapping: hubspot-companies\n';
    const dir = jobsDir({ 'Nightly.yaml': good, 'one.yaml': good });
    expect(() => loadJob(dir, 'Nightly')).toThrow(
      `${join(dir, 'Nightly.yaml')}: job names (file names) use lower-case letters, digits, - and _`,
    );
    // The folder beside holds a file by that name: never reached.
    writeFileSync(join(dir, '..', 'beside.yaml'), good);
    expect(() => loadJob(dir, '../beside')).toThrow(/^no job "\.\.\/beside" in /);
  });
});

describe('loadJobs', () => {
  it('loads the good jobs and lists the problems of the others', () => {
    const good = 'entity: companies\nsource: { path: a.csv }\nmapping: hubspot-companies\n';
    const dir = jobsDir({
      'good.yaml': good,
      'twice.yaml': good,
      'twice.yml': good,
      'bad.yaml': 'entity: companies\nsource: { path: a.csv }\n',
      'Bad Name.yaml': good,
      'notes.txt': 'not a job',
    });
    const { jobs, problems } = loadJobs(dir);
    expect(jobs.map((j) => j.name)).toEqual(['good']);
    expect(problems).toHaveLength(3);
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringContaining('Bad Name.yaml: job names'),
        expect.stringMatching(/bad\.yaml: mapping: /),
        expect.stringMatching(/^job "twice" is defined twice/),
      ]),
    );
  });

  it('says so when the folder does not exist', () => {
    expect(loadJobs(join(root, 'nope')).problems[0]).toMatch(/does not exist/);
  });

  it('loads the example jobs shipped in jobs/ without a problem', () => {
    const { jobs, problems } = loadJobs(join(import.meta.dirname, '..', '..', 'jobs'));
    expect(problems).toEqual([]);
    expect(jobs.map((j) => j.name)).toEqual(
      expect.arrayContaining(['hubspot-companies', 'hubspot-owners', 'salesforce-accounts']),
    );
    expect(jobs.some((j) => j.schedule === '0 2 * * *' && j.timezone)).toBe(true);
  });
});
