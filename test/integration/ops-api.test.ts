/**
 * The ops API end to end: a real worker, Redis and sandbox behind the ops
 * server. Jobs with their schedule, next slot and last run; a plan; a run
 * started with POST and followed until it completes; its history, its JSON
 * (the `show --json` summary with timings), its failures as JSON and as the
 * CLI's own CSV; a retry; and the 4xx of each route. Every JSON answer is
 * checked against the served OpenAPI document (ops-api-harness.ts).
 */
import { writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { failurePages, printCsv } from '../../src/engine/run-failures.js';
import { runSummary } from '../../src/engine/run-summary.js';
import { registerSecret } from '../../src/log.js';
import { lastSlotKey } from '../../src/schedule/slot.js';
import {
  useEngines,
  ACCOUNTS_HEADER as HEADER,
  ACCOUNTS_MAPPING as mapping,
  type EngineHarness,
} from '../harness/engine.js';
import { startApi, type ApiClient } from './ops-api-harness.js';

const engine = useEngines();

const FORMULA = '@SUM(1,2)';
const ROWS = [
  ['ACME-1', 'Acme', 'www.acme.com', 'false'], // line 2: created
  ['GLOBEX-1', 'Globex', FORMULA, 'false'], // line 3: created without website, a warning
  ['INITECH-1', 'Initech', 'initech.example', 'TRUE'], // line 4: skipped
  ['UMBRELLA-1', ' ', 'umbrella.example', 'false'], // line 5: invalid (no name)
];

interface Detail {
  runId: string;
  job: string;
  status: string;
  counts: Record<string, number>;
  timings: Record<string, number>;
  progress?: Record<string, number>;
}

async function setUp(): Promise<{ h: EngineHarness; api: ApiClient }> {
  const h = await engine();
  const path = h.writeCsv('accounts.csv', HEADER, ROWS);
  h.writeJob('accounts', {
    entity: 'companies',
    source: { path },
    mapping,
    schedule: '0 3 * * *',
    timezone: 'Europe/Berlin',
    thresholds: { minRows: 0, maxInvalidShare: 0.5 },
  });
  writeFileSync(join(h.jobsDir, 'broken.yaml'), 'entity: planets\n');
  const api = await startApi(h);
  return { h, api };
}

async function untilEnded(api: ApiClient, runId: string): Promise<Detail[]> {
  const seen: Detail[] = [];
  for (let i = 0; i < 600; i++) {
    const res = await api.call('GET', `/api/runs/${runId}`, { route: '/api/runs/{runId}' });
    expect(res.status).toBe(200);
    const run = res.body as Detail;
    seen.push(run);
    if (['completed', 'failed', 'stopped'].includes(run.status)) return seen;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`run ${runId} did not end`);
}

/** A request with its own Host header (fetch sets Host itself). */
function withHost(
  base: string,
  method: string,
  path: string,
  host: string,
): Promise<{ status: number; text: string }> {
  const url = new URL(path, base);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method, headers: { host: `${host}:${url.port}`, 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end(method === 'POST' ? JSON.stringify({ job: 'accounts' }) : undefined);
  });
}

const post = (body: unknown, headers: Record<string, string> = {}) => ({
  body: typeof body === 'string' ? body : JSON.stringify(body),
  headers: { 'content-type': 'application/json', ...headers },
});

describe('ops API', () => {
  it('lists jobs, plans, starts a run and follows it, lists its history, failures and retry', async () => {
    const { h, api } = await setUp();
    try {
      const doc = (await (await fetch(`${api.ops.url}/api/openapi.json`)).json()) as {
        openapi: string;
        paths: Record<string, unknown>;
      };
      expect(doc.openapi).toBe('3.1.0');
      expect(Object.keys(doc.paths).sort()).toEqual([
        '/api/jobs',
        '/api/jobs/{name}/pause',
        '/api/jobs/{name}/plan',
        '/api/jobs/{name}/resume',
        '/api/runs',
        '/api/runs/{runId}',
        '/api/runs/{runId}/cancel',
        '/api/runs/{runId}/failures',
        '/api/runs/{runId}/retry',
      ]);
      const jobs = await api.call('GET', '/api/jobs');
      expect(jobs.status).toBe(200);
      const list = jobs.body as {
        jobs: { name: string; nextSlot: string; lastRun: unknown; timezone: string }[];
        problems: string[];
      };
      expect(list.jobs.map((j) => j.name)).toEqual(['accounts']);
      const [accounts] = list.jobs;
      expect(accounts).toMatchObject({
        entity: 'companies',
        mapping: 'inline',
        // The file sets no priority: the effective one, 1.
        priority: 1,
        schedule: '0 3 * * *',
        timezone: 'Europe/Berlin',
        lastRun: null,
      });
      // 03:00 in Berlin is 01:00 or 02:00 UTC, within the next day.
      const next = Date.parse(accounts!.nextSlot);
      expect(accounts!.nextSlot).toMatch(/T0[12]:00:00\.000Z$/);
      expect(next).toBeGreaterThan(Date.now());
      expect(next - Date.now()).toBeLessThanOrEqual(24 * 3_600_000);
      expect(list.problems.join('\n')).toMatch(/broken\.yaml.*entity/s);

      const plan = await api.call('GET', '/api/jobs/accounts/plan', {
        route: '/api/jobs/{name}/plan',
      });
      expect(plan.status).toBe(200);
      expect(plan.body).toMatchObject({
        runId: null,
        job: 'accounts',
        status: 'dry-run',
        counts: { read: 4, created: 2, invalid: 1, skipped: 1, warnings: 1 },
      });
      expect((plan.body as { warnings: { field: string }[] }).warnings).toMatchObject([
        { line: 3, field: 'website' },
      ]);
      const unknownPlan = await api.call('GET', '/api/jobs/nope/plan', {
        route: '/api/jobs/{name}/plan',
      });
      expect(unknownPlan.status).toBe(404);
      expect((unknownPlan.body as { error: string }).error).toContain('"nope"');
      const brokenPlan = await api.call('GET', '/api/jobs/broken/plan', {
        route: '/api/jobs/{name}/plan',
      });
      expect(brokenPlan.status).toBe(422);
      expect((brokenPlan.body as { error: string }).error).not.toContain('\n');
      // A source that cannot be read names itself.
      h.writeJob('lost', {
        entity: 'companies',
        source: { path: join(h.dir, 'gone.csv') },
        mapping,
      });
      const lost = await api.call('GET', '/api/jobs/lost/plan', { route: '/api/jobs/{name}/plan' });
      expect(lost.status).toBe(422);
      expect((lost.body as { error: string }).error).toContain('gone.csv');
      const badMode = await api.call('GET', '/api/jobs/accounts/plan?mode=delete', {
        route: '/api/jobs/{name}/plan',
      });
      expect(badMode.status).toBe(400);
      expect((badMode.body as { error: string }).error).toMatch(/^query: mode: /);

      // Enqueued while no worker runs: the run is shown at once, queued, with its progress.
      await h.stopWorkers();
      const started = await api.call('POST', '/api/runs', post({ job: 'accounts', full: false }));
      expect(started.status).toBe(202);
      const { runId, attached } = started.body as { runId: string; attached: boolean };
      expect(attached).toBe(false);
      const queued = await api.call('GET', `/api/runs/${runId}`, { route: '/api/runs/{runId}' });
      expect(queued.body).toMatchObject({
        runId,
        status: 'queued',
        progress: { writesPlanned: 0, writesSettled: 0, created: 0, updated: 0 },
      });
      await h.startWorkers();
      const polls = await untilEnded(api, runId);
      const done = polls.at(-1)!;
      expect(done.status).toBe('completed');
      expect(done.counts).toMatchObject({ created: 2, invalid: 1, skipped: 1, warnings: 1 });
      expect(Object.keys(done.timings).length).toBeGreaterThan(0);
      expect(done.progress).toBeUndefined();
      // While it went, every answer said how far it had got.
      for (const p of polls.slice(0, -1)) expect(p.progress).toBeDefined();
      // The same JSON as `crm-sync show RUN --json`, plus timings.
      const record = (await h.store.runs.get(runId))!;
      const { timings, ...shown } = done;
      expect(shown).toEqual(runSummary(record));
      expect(timings).toEqual(record.timings);

      const jobsAfter = await api.call('GET', '/api/jobs');
      expect(
        (jobsAfter.body as { jobs: { lastRun: { runId: string } }[] }).jobs[0]!.lastRun.runId,
      ).toBe(runId);

      // History: newest first, filtered by job and status on the server.
      const second = await h.runJob('accounts');
      const history = await api.call('GET', '/api/runs?job=accounts');
      expect((history.body as { runs: Detail[] }).runs.map((r) => r.runId)).toEqual([
        second.id,
        runId,
      ]);
      const paged = await api.call('GET', '/api/runs?status=completed&limit=1&offset=1', {
        route: '/api/runs',
      });
      expect((paged.body as { runs: Detail[] }).runs.map((r) => r.runId)).toEqual([runId]);
      const failedOnly = await api.call('GET', '/api/runs?status=failed');
      expect((failedOnly.body as { runs: Detail[] }).runs).toEqual([]);
      for (const q of ['status=done', 'limit=0', 'limit=x', 'offset=-1', 'colour=red']) {
        const bad = await api.call('GET', `/api/runs?${q}`);
        expect(bad.status, q).toBe(400);
        expect((bad.body as { error: string }).error).toMatch(/^query: /);
      }
      expect((await api.call('GET', '/api/runs/nope', { route: '/api/runs/{runId}' })).status).toBe(
        404,
      );

      // Failures: JSON by default, filtered by kind and field.
      const route = '/api/runs/{runId}/failures';
      const all = await api.call('GET', `/api/runs/${runId}/failures`, { route });
      expect(all.status).toBe(200);
      expect((all.body as { rows: { line: number; kind: string }[] }).rows).toMatchObject([
        { line: 3, kind: 'warning', field: 'website', value: FORMULA },
        { line: 4, kind: 'skipped' },
        { line: 5, kind: 'invalid', field: 'name', identity: 'x:test:UMBRELLA-1' },
      ]);
      const warnings = await api.call('GET', `/api/runs/${runId}/failures?kind=warning`, { route });
      expect((warnings.body as { rows: { line: number }[] }).rows.map((r) => r.line)).toEqual([3]);
      const byField = await api.call('GET', `/api/runs/${runId}/failures?field=name`, { route });
      expect((byField.body as { rows: { line: number }[] }).rows.map((r) => r.line)).toEqual([5]);
      const page = await api.call('GET', `/api/runs/${runId}/failures?limit=1&offset=1`, { route });
      expect(page.body).toMatchObject({ limit: 1, offset: 1, rows: [{ line: 4 }] });
      for (const q of ['kind=oops', 'limit=5000', 'offset=-2']) {
        const bad = await api.call('GET', `/api/runs/${runId}/failures?${q}`, { route });
        expect(bad.status, q).toBe(400);
      }
      expect((await api.call('GET', '/api/runs/nope/failures', { route })).status).toBe(404);

      // CSV: the CLI's own writer, byte for byte, with the formula cell made text.
      const csv = await api.call('GET', `/api/runs/${runId}/failures`, {
        route,
        headers: { accept: 'text/csv' },
      });
      expect(csv.status).toBe(200);
      expect(csv.headers.get('content-type')).toMatch(/^text\/csv/);
      let cli = '';
      await printCsv(failurePages(h.store, runId, 0), async (t) => {
        cli += t;
      });
      expect(csv.text).toBe(cli);
      expect(csv.text.split('\r\n')[0]).toBe(
        'line,kind,field,reason,value,identity,record,survivor_line,survivor_record',
      );
      expect(csv.text).toContain(`,"'@SUM(1,2)",`);
      const csvWarnings = await api.call('GET', `/api/runs/${runId}/failures?kind=skipped`, {
        route,
        headers: { accept: 'text/csv' },
      });
      expect(csvWarnings.text.trim().split('\r\n')).toHaveLength(2);

      // Retry: as `crm-sync retry`.
      const retry = await api.call('POST', `/api/runs/${runId}/retry`, {
        route: '/api/runs/{runId}/retry',
      });
      expect(retry.status).toBe(202);
      const retried = retry.body as { runId: string; retryOf: string };
      expect(retried.retryOf).toBe(runId);
      const retriedRun = (await untilEnded(api, retried.runId)).at(-1)!;
      expect(retriedRun.status).toBe('completed');
      expect((await h.store.runs.get(retried.runId))!.options).toBeDefined();
      expect(
        (await api.call('POST', '/api/runs/nope/retry', { route: '/api/runs/{runId}/retry' }))
          .status,
      ).toBe(404);

      // Cancel: a run that has ended refuses it; no run is a 404.
      const cancelEnded = await api.call('POST', `/api/runs/${runId}/cancel`, {
        route: '/api/runs/{runId}/cancel',
      });
      expect(cancelEnded.status).toBe(409);
      expect((cancelEnded.body as { error: string }).error).toContain('already ended');
      expect((await h.store.runs.get(runId))!.status).toBe('completed');
      expect(
        (await api.call('POST', '/api/runs/nope/cancel', { route: '/api/runs/{runId}/cancel' }))
          .status,
      ).toBe(404);

      // Every route answered its success, checked against the document.
      for (const ok of [
        'get /api/jobs 200',
        'get /api/jobs/{name}/plan 200',
        'get /api/runs 200',
        'post /api/runs 202',
        'get /api/runs/{runId} 200',
        'get /api/runs/{runId}/failures 200',
        'post /api/runs/{runId}/retry 202',
      ])
        expect(api.seen).toContain(ok);
    } finally {
      await api.ops.close();
    }
  });

  it('refuses bad bodies, unknown jobs, runs not ended and requests from another site', async () => {
    const { h, api } = await setUp();
    try {
      const cases: [unknown, Record<string, string>, number, RegExp][] = [
        [{ job: 'nope' }, {}, 404, /"nope"/],
        [{ job: 'broken' }, {}, 422, /entity/],
        [{ job: 'accounts', dryRun: true }, {}, 400, /^body: dryRun: unknown field$/],
        [{ job: 'accounts', mode: 'delete' }, {}, 400, /^body: mode: /],
        [{ job: 'accounts', full: 'yes' }, {}, 400, /^body: full: /],
        [{ full: true }, {}, 400, /^body: job: /],
        ['{"job": ', {}, 400, /not JSON/],
        ['[1,2]', {}, 400, /^body: /],
        [{ job: 'accounts' }, { 'content-type': 'text/plain' }, 415, /application\/json/],
        [{ job: 'accounts', pad: 'x'.repeat(17 * 1024) }, {}, 413, /over 16384 bytes/],
        [{ job: 'accounts' }, { origin: 'https://evil.example' }, 403, /Origin/],
        [{ job: 'accounts' }, { origin: 'null' }, 403, /Origin/],
        [{ job: 'accounts' }, { 'sec-fetch-site': 'cross-site' }, 403, /Sec-Fetch-Site/],
      ];
      for (const [body, headers, status, reason] of cases) {
        const res = await api.call('POST', '/api/runs', post(body, headers));
        expect(res.status, JSON.stringify(body).slice(0, 60)).toBe(status);
        const { error } = res.body as { error: string };
        expect(error).toMatch(reason);
        expect(error).not.toContain('\n');
      }
      // A name that an attacker's DNS pointed at 127.0.0.1 (DNS rebinding) gets nothing.
      for (const [method, path] of [
        ['GET', '/api/runs'],
        ['POST', '/api/runs'],
      ] as const) {
        const rebound = await withHost(api.ops.url, method, path, 'evil.example');
        expect(rebound.status, `${method} ${path}`).toBe(403);
        expect(JSON.parse(rebound.text)).toEqual({
          error: 'without OPS_TOKEN this server answers only requests to a loopback host',
        });
      }
      expect((await withHost(api.ops.url, 'GET', '/api/runs', 'localhost')).status).toBe(200);
      // Nothing above started a run.
      expect(await h.store.runs.list()).toEqual([]);
      const unknown = await fetch(`${api.ops.url}/api/nothing`);
      expect(unknown.status).toBe(404);
      expect(await unknown.json()).toEqual({ error: 'no route GET /api/nothing' });

      // The console's own page (same origin, same site) may start one. No worker
      // takes it: it stays queued, and the next start finds it going.
      await h.stopWorkers();
      const own = new URL(api.ops.url);
      const ok = await api.call(
        'POST',
        '/api/runs',
        post({ job: 'accounts' }, { origin: own.origin, 'sec-fetch-site': 'same-origin' }),
      );
      expect(ok.status).toBe(202);
      const { runId } = ok.body as { runId: string };
      // A second start while it goes attaches to it.
      const again = await api.call('POST', '/api/runs', post({ job: 'accounts' }));
      expect(again.status).toBe(202);
      expect(again.body).toEqual({ runId, attached: true });
      expect(await h.store.runs.list()).toHaveLength(1);

      // A retry of a run still going is refused: a run record that no worker has taken.
      const queued = await h.store.runs.create({
        job: 'accounts',
        entity: 'companies',
        mode: 'upsert',
        source: 'accounts.csv',
      });
      const early = await api.call('POST', `/api/runs/${queued}/retry`, {
        route: '/api/runs/{runId}/retry',
      });
      expect(early.status).toBe(409);
      expect((early.body as { error: string }).error).toContain(queued);
      const crossRetry = await api.call('POST', `/api/runs/${queued}/retry`, {
        route: '/api/runs/{runId}/retry',
        headers: { 'sec-fetch-site': 'cross-site' },
      });
      expect(crossRetry.status).toBe(403);

      // A cancel of a run no worker has taken ends it at once; a body is refused.
      const withBody = await api.call('POST', `/api/runs/${queued}/cancel`, {
        route: '/api/runs/{runId}/cancel',
        ...post({ why: 'x' }),
      });
      expect(withBody.status).toBe(400);
      const crossCancel = await api.call('POST', `/api/runs/${queued}/cancel`, {
        route: '/api/runs/{runId}/cancel',
        headers: { 'sec-fetch-site': 'cross-site' },
      });
      expect(crossCancel.status).toBe(403);
      expect((await h.store.runs.get(queued))!.status).toBe('queued');
      const cancel = await api.call('POST', `/api/runs/${queued}/cancel`, {
        route: '/api/runs/{runId}/cancel',
      });
      expect(cancel.status).toBe(202);
      expect(cancel.body).toEqual({ runId: queued, status: 'cancelled' });
      expect((await h.store.runs.get(queued))!.status).toBe('cancelled');
      expect(api.seen).toContain('post /api/runs/{runId}/cancel 202');

      // A run past its finalize's point of no return ends completed: the cancel is refused.
      const completing = await h.store.runs.create({
        job: 'accounts',
        entity: 'companies',
        mode: 'upsert',
        source: 'accounts.csv',
      });
      await h.store.runs.update(completing, { status: 'finalizing' });
      expect(await h.store.runs.markCompleting(completing)).toBe(true);
      const late = await api.call('POST', `/api/runs/${completing}/cancel`, {
        route: '/api/runs/{runId}/cancel',
      });
      expect(late.status).toBe(409);
      expect((late.body as { error: string }).error).toBe(
        `run ${completing} is completing (every write has settled and been verified); it ends completed, there is nothing to cancel`,
      );
      expect((await h.store.runs.get(completing))!.cancelRequested).toBeUndefined();
    } finally {
      await api.ops.close();
    }
  });

  it("shows each job's priority, as its file sets it", async () => {
    const { h, api } = await setUp();
    h.writeJob('weighted', {
      entity: 'companies',
      source: { path: 'x.csv' },
      mapping,
      priority: 7,
    });
    try {
      const res = await api.call('GET', '/api/jobs');
      expect(res.status).toBe(200);
      const { jobs } = res.body as { jobs: { name: string; priority: number }[] };
      expect(jobs.map((j) => [j.name, j.priority])).toEqual([
        ['accounts', 1],
        ['weighted', 7],
      ]);
    } finally {
      await api.ops.close();
    }
  });

  it("pauses and resumes a job's schedule, shown in the jobs list and kept in Redis", async () => {
    const { h, api } = await setUp();
    h.writeJob('manual', { entity: 'companies', source: { path: 'x.csv' }, mapping });
    const redis = h.producer.redis;
    const pauseKey = `${h.prefix}:schedule:paused:accounts`;
    const pause = (name: string, o: { body?: string; headers?: Record<string, string> } = {}) =>
      api.call('POST', `/api/jobs/${name}/pause`, { route: '/api/jobs/{name}/pause', ...o });
    const resume = (name: string) =>
      api.call('POST', `/api/jobs/${name}/resume`, { route: '/api/jobs/{name}/resume' });
    const listed = async (name: string) => {
      const res = await api.call('GET', '/api/jobs');
      expect(res.status).toBe(200);
      return (
        res.body as { jobs: { name: string; paused: unknown; nextSlot: unknown }[] }
      ).jobs.find((j) => j.name === name)!;
    };
    try {
      expect(await listed('accounts')).toMatchObject({ paused: null });
      const before = Date.now();
      const paused = await pause('accounts');
      expect(paused.status).toBe(200);
      const body = paused.body as { paused: { by: string; since: string }; nextSlot: string };
      expect(body).toMatchObject({
        name: 'accounts',
        schedule: '0 3 * * *',
        timezone: 'Europe/Berlin',
        paused: { by: 'ops-api' },
      });
      expect(Date.parse(body.paused.since)).toBeGreaterThanOrEqual(before - 1_000);
      expect(Date.parse(body.paused.since)).toBeLessThanOrEqual(Date.now());
      expect(await redis.hgetall(pauseKey)).toEqual(body.paused);
      // The jobs list shows it paused, its next slot as before.
      expect(await listed('accounts')).toEqual(
        expect.objectContaining({ paused: body.paused, nextSlot: body.nextSlot }),
      );
      // Pausing again keeps the first pause.
      expect((await pause('accounts')).body).toEqual(body);

      for (const [name, o, status, reason] of [
        ['nope', {}, 404, /"nope"/],
        ['broken', {}, 422, /entity/],
        ['manual', {}, 409, /^job manual has no schedule to pause$/],
        ['accounts', post({ by: 'me' }), 400, /^body: this request takes no fields$/],
        ['accounts', post({}, { 'sec-fetch-site': 'cross-site' }), 403, /Sec-Fetch-Site/],
      ] as const) {
        const res = await pause(name, o);
        expect(res.status, name).toBe(status);
        expect((res.body as { error: string }).error).toMatch(reason);
      }
      expect((await resume('nope')).status).toBe(404);
      expect(await redis.exists(`${h.prefix}:schedule:paused:manual`)).toBe(0);

      const resumed = await resume('accounts');
      expect(resumed.status).toBe(200);
      expect(resumed.body).toMatchObject({ name: 'accounts', paused: null });
      expect(await redis.exists(pauseKey)).toBe(0);
      // The slots passed while paused are not missed: the last slot is the resume.
      const last = await redis.get(lastSlotKey(h.prefix, 'accounts'));
      expect(Date.parse(last!)).toBeGreaterThanOrEqual(Date.parse(body.paused.since) - 1_000);
      expect(await listed('accounts')).toMatchObject({ paused: null });
      // Resuming a job that runs changes nothing.
      expect((await resume('accounts')).status).toBe(200);
      expect(await redis.get(lastSlotKey(h.prefix, 'accounts'))).toBe(last);
    } finally {
      await api.ops.close();
    }
  });

  it('answers an error without the registered secrets or URL credentials its message held', async () => {
    const h = await engine({ deferWorkers: true });
    const api = await startApi(h);
    // A secret the process registered (as the config registers the API key),
    // and a URL with a user and password, in the path of a source that is
    // not there: the plan's 422 names the path.
    const registered = 'ops-err-secret-3Mm8';
    registerSecret(registered);
    const sources = {
      registered: `${h.dir}/${registered}/gone.csv`,
      credentials: `${h.dir}/https://exporter:ops-url-pass-6Cc@files.example/gone.csv`,
    };
    try {
      for (const [name, path] of Object.entries(sources)) {
        h.writeJob(name, { entity: 'companies', source: { path }, mapping });
        const res = await api.call('GET', `/api/jobs/${name}/plan`, {
          route: '/api/jobs/{name}/plan',
        });
        expect(res.status, res.text).toBe(422);
        const { error } = res.body as { error: string };
        expect(error).toContain('gone.csv');
        for (const secret of [registered, 'ops-url-pass-6Cc', 'exporter:']) {
          expect(res.text, name).not.toContain(secret);
        }
      }
    } finally {
      await api.ops.close();
    }
  });

  it('with OPS_TOKEN, every /api route, /metrics and /queues need the token; probes and the page do not', async () => {
    const h = await engine({ deferWorkers: true });
    const token = 'ops-api-token-for-tests-5678';
    const api = await startApi(h, { token });
    const url = api.ops.url;
    try {
      for (const [method, path] of [
        ['GET', '/api/jobs'],
        ['GET', '/api/openapi.json'],
        ['GET', '/api/runs'],
        ['GET', '/api/runs/x'],
        ['GET', '/api/runs/x/failures'],
        ['GET', '/api/jobs/x/plan'],
        ['POST', '/api/runs'],
        ['POST', '/api/runs/x/retry'],
        ['POST', '/api/jobs/accounts/pause'],
        ['POST', '/api/jobs/accounts/resume'],
        ['POST', '/api/runs/x/cancel'],
        ['GET', '/metrics'],
        ['GET', '/queues'],
      ] as const) {
        for (const authorization of [undefined, 'Bearer wrong', `Basic ${token}`, token]) {
          const res = await fetch(`${url}${path}`, {
            method,
            headers: {
              'content-type': 'application/json',
              ...(authorization !== undefined && { authorization }),
            },
            ...(method === 'POST' && { body: JSON.stringify({ job: 'accounts' }) }),
          });
          expect(res.status, `${method} ${path} ${authorization ?? ''}`).toBe(401);
          expect(await res.json()).toEqual({ error: 'a valid bearer token is required' });
        }
      }
      expect(await h.store.runs.list()).toEqual([]);
      for (const path of ['/healthz', '/readyz', '/']) {
        expect((await fetch(`${url}${path}`)).status, path).toBe(200);
      }
      // With the token: the API answers (validated against the document).
      const jobs = await api.call('GET', '/api/jobs');
      expect(jobs.status).toBe(200);
      expect(
        (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token}` } })).status,
      ).toBe(200);
    } finally {
      await api.ops.close();
    }
  });
});
