/**
 * A job's alerts webhook that could not be delivered to is said before any
 * run: a literal URL with a credential in it is refused by the job file's
 * schema, and a `${NAME}` whose variable is not set (or empty) is a problem
 * of `validate` and of the jobs list (`GET /api/jobs`, the console's jobs page).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { JobAlertsSchema, jobAlertProblems } from '../../src/alerts/rules.js';
import { listJobs } from '../../src/engine/job-service.js';
import { loadJobs } from '../../src/jobs/definition.js';
import { cachedJobLoader } from '../../src/jobs/job-loader.js';

const root = mkdtempSync(join(tmpdir(), 'crm-sync-alert-hooks-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let n = 0;
function jobsDir(files: Record<string, string>): string {
  const dir = join(root, `case-${n++}`);
  mkdirSync(dir, { recursive: true });
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

const job = (webhook: string) =>
  [
    'entity: companies',
    'source: { path: ./companies.csv }',
    'mapping: hubspot-companies',
    `alerts: { webhook: '${webhook}' }`,
  ].join('\n');

function refusal(webhook: string): string | undefined {
  const r = JobAlertsSchema.safeParse({ webhook });
  return r.success ? undefined : r.error.issues.map((i) => i.message).join('; ');
}

describe('a literal webhook URL', () => {
  it('is refused with a credential in its query, naming the parameter and never its value', () => {
    for (const [url, param] of [
      ['https://alerts.example/hook?token=s3cr3tValue', 'token'],
      ['https://alerts.example/hook?channel=ops&key=s3cr3tValue', 'key'],
      ['https://alerts.example/hook?api_key=s3cr3tValue', 'api_key'],
      ['https://alerts.example/hook?sig=s3cr3tValue&se=2030', 'sig'],
      ['https://alerts.example/hook?X-Amz-Signature=s3cr3tValue', 'X-Amz-Signature'],
    ] as const) {
      const why = refusal(url);
      expect(why, url).toContain(`query parameter ${param}`);
      expect(why).toMatch(/write \$\{NAME\}/);
      expect(why).not.toContain('s3cr3tValue');
    }
  });

  it('is refused with a user name or a ${NAME} inside it; plain ones and whole references pass', () => {
    expect(refusal('https://user:pw@alerts.example/hook')).toMatch(/user name or password/);
    // Only a whole ${NAME} is read from the environment: a part would be posted as written.
    expect(refusal('https://alerts.example/hook?token=${HOOK_TOKEN}')).toMatch(/whole webhook/);
    expect(refusal('https://alerts.example/hook?channel=ops')).toBeUndefined();
    expect(refusal('https://hooks.slack.com/services/T0/B0/abc')).toBeUndefined();
    expect(refusal('${SLACK_HOOK}')).toBeUndefined();
  });

  it('with a credential makes the job file a problem of the folder', () => {
    const dir = jobsDir({ 'leaky.yaml': job('https://alerts.example/hook?token=abc123') });
    const { jobs, problems } = loadJobs(dir);
    expect(jobs).toEqual([]);
    expect(problems).toEqual([
      expect.stringMatching(/leaky\.yaml: alerts\.webhook: .*query parameter token/),
    ]);
  });
});

describe('a ${NAME} webhook whose variable is not set', () => {
  const dir = jobsDir({
    'unset.yaml': job('${UNSET_HOOK}'),
    'empty.yaml': job('${EMPTY_HOOK}'),
    'fine.yaml': job('${SET_HOOK}'),
    'global.yaml': job('https://alerts.example/hook'),
  });
  const env = { EMPTY_HOOK: '', SET_HOOK: 'https://hooks.example/services/T/B/k' };

  it('is a problem naming the file, the path and the variable', () => {
    const { jobs, problems } = loadJobs(dir);
    expect(problems).toEqual([]);
    expect(jobAlertProblems(jobs, env)).toEqual([
      `${join(dir, 'empty.yaml')}: alerts.webhook: the webhook names the environment variable EMPTY_HOOK, which is empty: this job's alerts cannot be delivered`,
      `${join(dir, 'unset.yaml')}: alerts.webhook: the webhook names the environment variable UNSET_HOOK, which is not set: this job's alerts cannot be delivered`,
    ]);
    expect(jobAlertProblems(jobs, { ...env, UNSET_HOOK: 'x', EMPTY_HOOK: 'y' })).toEqual([]);
  });

  it('is in the problems of the jobs list, the job still listed', async () => {
    const store = { runs: { list: () => Promise.resolve([]) } };
    const load = cachedJobLoader(dir, { mappingsDir: root });
    const list = await listJobs({
      store,
      pauseOf: () => Promise.resolve(null),
      config: { jobsDir: dir, sourceEnv: env },
      loadJob: load,
    });
    expect(list.jobs.map((j) => j.name)).toEqual(['empty', 'fine', 'global', 'unset']);
    expect(list.problems).toEqual([
      expect.stringMatching(/empty\.yaml: alerts\.webhook: .*EMPTY_HOOK, which is empty/),
      expect.stringMatching(/unset\.yaml: alerts\.webhook: .*UNSET_HOOK, which is not set/),
    ]);
  });
});
