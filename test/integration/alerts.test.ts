/**
 * Alerts end to end: real runs against the sandbox, the alert worker of the
 * worker service, and a local HTTP server on 127.0.0.1 as the webhook. Each
 * run end that should alert delivers exactly one alert with the right shape
 * (generic JSON or Slack), a link to the run's page when CRM_SYNC_PUBLIC_URL
 * is set, and no secret or row value; a webhook that answers 503 twice
 * still gets it once; a webhook that never answers holds no run. Every
 * attempt is signed (checked here with node:crypto over the bytes received)
 * and carries the same idempotency key; an alert given up after its last
 * attempt is logged at error once, counted and noted on its run; an export
 * of 0 rows after a run that read some stops before writing and alerts.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { captureLogger } from '../harness/log-capture.js';
import type { GenericPayload, SlackPayload } from '../../src/alerts/payload.js';
import { runSummary } from '../../src/engine/run-summary.js';
import { registerSecret } from '../../src/log.js';
import { processMetrics } from '../../src/ops/metrics.js';
import {
  API_KEY,
  companyRows,
  countWrites,
  hubspotCells,
  hubspotJob,
  HUBSPOT_HEADER,
  statsSince,
  useEngines,
  type EngineHarness,
} from '../harness/engine.js';

const engine = useEngines();

interface Received {
  path: string;
  body: string;
  /** The body's bytes as received. */
  raw: Buffer;
  headers: IncomingHttpHeaders;
  status: number | 'hung';
}

type Answer = number | 'hang';

/** A webhook on 127.0.0.1: answers each request as `answer(n, path)` says (n counts from 1 per path). */
async function webhook(answer: (n: number, path: string) => Answer = () => 200) {
  const received: Received[] = [];
  const hung: ServerResponse[] = [];
  const seen = new Map<string, number>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      const n = (seen.get(path) ?? 0) + 1;
      seen.set(path, n);
      const a = answer(n, path);
      const raw = Buffer.concat(chunks);
      const entry: Received = {
        path,
        body: raw.toString('utf8'),
        raw,
        headers: req.headers,
        status: a === 'hang' ? 'hung' : a,
      };
      received.push(entry);
      if (a === 'hang') hung.push(res);
      else res.writeHead(a, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    received,
    hung,
    /** Bodies answered with a 2xx, parsed. */
    delivered<T>(path: string): T[] {
      return received
        .filter((r) => r.path === path && typeof r.status === 'number' && r.status < 300)
        .map((r) => JSON.parse(r.body) as T);
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

const hooks: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(hooks.splice(0).map((h) => h.close()));
});

/** Waits until no alert is waiting, delayed or being delivered. */
async function alertsSettled(h: EngineHarness): Promise<void> {
  const q = h.service!.alertQueue;
  const deadline = Date.now() + 20_000;
  for (;;) {
    const c = await q.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
    if (Object.values(c).every((n) => n === 0)) return;
    if (Date.now() > deadline) throw new Error(`alerts still queued: ${JSON.stringify(c)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function until(what: string, ok: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Alerts given up so far under a rule, in the process's metrics. */
async function droppedCount(rule: string): Promise<number> {
  const { values } = await processMetrics().alertsDropped.get();
  return values.find((v) => v.labels.rule === rule)?.value ?? 0;
}

const PUBLIC_URL = 'https://ops.example.com/crm-sync';
// A Slack webhook's path is its key: it must show up nowhere.
const SLACK_PATH = '/slack/T0000/B0000/k3yOfTheW3bhook';

describe('alerts', () => {
  it('one alert per run end: stopped (generic JSON, after two 503s), rejected rows (Slack), none for a clean run', async () => {
    // The global webhook answers its first two requests 503, then 200.
    const hook = await webhook((n, path) => (path === '/global' && n <= 2 ? 503 : 200));
    hooks.push(hook);
    const h = await engine({
      env: {
        CRM_SYNC_ALERT_WEBHOOK: `${hook.url}/global`,
        CRM_SYNC_PUBLIC_URL: PUBLIC_URL,
        CRM_SYNC_ALERT_BACKOFF_MS: '20',
        SLACK_HOOK: `${hook.url}${SLACK_PATH}`,
      },
    });
    const rows = companyRows(30);
    const path = h.writeCsv('companies.csv', HUBSPOT_HEADER, rows.map(hubspotCells));
    h.writeJob('companies', hubspotJob(path));

    // A clean first sync: no alert.
    const clean = await h.runJob('companies');
    expect(clean.status).toBe('completed');
    await alertsSettled(h);
    expect(hook.received).toEqual([]);

    // Every name changed: 100% of rows would change, the run stops.
    const renamed = rows.map((r) => ({ ...r, name: `${r.name} Renamed` }));
    h.writeCsv('companies.csv', HUBSPOT_HEADER, renamed.map(hubspotCells));
    const stopped = await h.runJob('companies');
    expect(stopped.status).toBe('stopped');
    await alertsSettled(h);
    expect(hook.received.map((r) => r.status)).toEqual([503, 503, 200]);
    const [alert] = hook.delivered<GenericPayload>('/global');
    expect(alert).toEqual({
      type: 'crm-sync.alert',
      kind: 'stopped',
      title: 'crm-sync: companies: run stopped by a safety threshold',
      job: 'companies',
      runId: stopped.id,
      status: 'stopped',
      reason: stopped.error,
      counts: {
        read: 30,
        created: 0,
        updated: 0,
        unchanged: 0,
        invalid: 0,
        conflict: 0,
        rejected: 0,
        failed: 0,
      },
      at: new Date(stopped.finishedAt!).toISOString(),
      url: `${PUBLIC_URL}/#/runs/${stopped.id}`,
    });
    expect(alert!.reason).toMatch(/would change/);

    // Another job, its own Slack webhook (a ${NAME} reference), three rows the platform refuses.
    const bad = [4, 11, 25];
    const broken = companyRows(30, 7_000_001).map((r, i) =>
      bad.includes(i) ? { ...r, name: `${'Overlong '.repeat(40)}${i}` } : r,
    );
    const rejectsPath = h.writeCsv('rejects.csv', HUBSPOT_HEADER, broken.map(hubspotCells));
    h.writeJob(
      'rejects',
      hubspotJob(rejectsPath, {
        alerts: { webhook: '${SLACK_HOOK}', format: 'slack', rejectedAbove: 2 },
      }),
    );
    const rejected = await h.runJob('rejects');
    expect(rejected.counts).toMatchObject({ created: 27, rejected: 3 });
    await alertsSettled(h);
    const slack = hook.delivered<SlackPayload>(SLACK_PATH);
    expect(slack).toHaveLength(1);
    const link = `${PUBLIC_URL}/#/runs/${rejected.id}`;
    expect(slack[0]!.text).toBe(`crm-sync: rejects: run completed with rows not synced (${link})`);
    const section = (slack[0]!.blocks[1] as { text: { text: string } }).text.text;
    expect(section).toContain(`*Run:* <${link}|${rejected.id}>`);
    expect(section).toContain('3 rejected');
    expect(section).toContain('*Fields:* `name`');
    expect(slack[0]!.blocks[2]).toMatchObject({ type: 'actions' });

    // One alert per run: the global webhook still holds only the stopped run's.
    expect(hook.delivered('/global')).toHaveLength(1);

    // No secret and no row value in any body, nor the webhook in Redis.
    const bodies = hook.received.map((r) => r.body).join('\n');
    for (const secret of [API_KEY, SLACK_PATH, 'k3yOfTheW3bhook'])
      expect(bodies).not.toContain(secret);
    for (const r of [...renamed, ...broken]) {
      expect(bodies).not.toContain(r.name);
      expect(bodies).not.toContain(r.domain);
      expect(bodies).not.toContain(String(r.id));
    }
    expect(bodies).not.toContain('Overlong');
    const stored = await h.redisText();
    expect(stored).not.toContain('k3yOfTheW3bhook');
    expect(stored).not.toContain(`${hook.url}/global`);
  });

  it('a run that failed on an error holding secrets alerts without them', async () => {
    const hook = await webhook();
    hooks.push(hook);
    const h = await engine({
      env: { CRM_SYNC_ALERT_WEBHOOK: `${hook.url}/hook`, CRM_SYNC_ALERT_BACKOFF_MS: '20' },
    });
    // A secret the process registered, and a URL with a user and password,
    // in the path of an export that is not there: the run's error names it.
    const registered = 'alert-run-secret-4Hh7';
    registerSecret(registered);
    const path = `${h.dir}/${registered}/https://exporter:alert-url-pass-1Qq@files.example/gone.csv`;
    h.writeJob('companies', hubspotJob(path));
    const run = await h.runJob('companies');
    expect(run.status).toBe('failed');
    await alertsSettled(h);
    const [alert] = hook.delivered<GenericPayload>('/hook');
    expect(alert!.runId).toBe(run.id);
    expect(alert!.reason).toContain('files.example/gone.csv');
    const bodies = hook.received.map((r) => r.body).join('\n');
    for (const secret of [registered, 'alert-url-pass-1Qq', 'exporter:'])
      expect(bodies).not.toContain(secret);
    const stored = await h.redisText();
    for (const secret of [registered, 'alert-url-pass-1Qq', 'exporter:'])
      expect(stored).not.toContain(secret);
  });

  it('a failed run (401) alerts once; a webhook that never answers holds no run, and gets it after its timeout', async () => {
    // The first request hangs for good; later ones are answered.
    const hook = await webhook((n) => (n === 1 ? 'hang' : 200));
    hooks.push(hook);
    const h = await engine({
      apiKey: 'not-the-key',
      env: {
        CRM_SYNC_ALERT_WEBHOOK: `${hook.url}/hook`,
        CRM_SYNC_ALERT_BACKOFF_MS: '20',
        CRM_SYNC_ALERT_TIMEOUT_MS: '3000',
      },
    });
    const path = h.writeCsv('companies.csv', HUBSPOT_HEADER, companyRows(10).map(hubspotCells));
    h.writeJob('companies', hubspotJob(path));

    const first = await h.runJob('companies');
    expect(first.status).toBe('failed');
    await until('the first alert to reach the webhook', () => hook.hung.length === 1);

    // While that request hangs, another run of the job runs, ends, and its alert is delivered.
    const second = await h.runJob('companies');
    expect(second.status).toBe('failed');
    await until('the second alert', () => hook.delivered('/hook').length >= 1);
    expect(hook.hung[0]!.writableEnded).toBe(false);
    expect(hook.delivered<GenericPayload>('/hook')[0]!.runId).toBe(second.id);

    // The hung delivery times out and is tried again: each run alerted exactly once.
    await alertsSettled(h);
    const delivered = hook.delivered<GenericPayload>('/hook');
    expect(delivered.map((a) => a.runId).sort()).toEqual([first.id, second.id].sort());
    for (const a of delivered) {
      expect(a.kind).toBe('failed');
      expect(a.reason).toMatch(/API key/);
      // No public URL set: no link.
      expect(a).not.toHaveProperty('url');
    }
    expect(hook.received.map((r) => r.body).join('\n')).not.toContain('not-the-key');
  });
  it('a 0-row export stops before writing; its alert is signed, each attempt with the same idempotency key', async () => {
    const SECRET = 'alert-signing-secret-0123456789';
    // The first attempt meets a 503; the second is answered.
    const hook = await webhook((n) => (n === 1 ? 503 : 200));
    hooks.push(hook);
    const h = await engine({
      env: {
        CRM_SYNC_ALERT_WEBHOOK: `${hook.url}/signed`,
        CRM_SYNC_ALERT_SECRET: SECRET,
        CRM_SYNC_ALERT_BACKOFF_MS: '20',
      },
    });
    const path = h.writeCsv('companies.csv', HUBSPOT_HEADER, companyRows(30).map(hubspotCells));
    h.writeJob('companies', hubspotJob(path));
    expect((await h.runJob('companies')).counts).toMatchObject({ read: 30, created: 30 });
    await alertsSettled(h);
    expect(hook.received).toEqual([]);

    // The export arrives empty (its header, no rows): the run stops before any write.
    h.writeCsv('companies.csv', HUBSPOT_HEADER, []);
    const before = await h.stats();
    const stopped = await h.runJob('companies');
    expect(stopped.status).toBe('stopped');
    expect(stopped.error).toBe(
      'the export has 0 rows; the last completed run read 30: check the export (an empty or truncated file, a wrong path or filter); run with --force to sync anyway',
    );
    expect(countWrites(statsSince(before, await h.stats()))).toBe(0);
    await alertsSettled(h);

    // Both attempts name the same alert event and are signed over the bytes received.
    expect(hook.received.map((r) => r.status)).toEqual([503, 200]);
    expect(hook.received.map((r) => r.headers['idempotency-key'])).toEqual([
      `alert-stopped-${stopped.id}`,
      `alert-stopped-${stopped.id}`,
    ]);
    for (const r of hook.received) {
      const ts = String(r.headers['x-crm-sync-timestamp']);
      expect(ts).toMatch(/^\d+$/);
      expect(Math.abs(Date.now() / 1000 - Number(ts))).toBeLessThan(300);
      const signature = String(r.headers['x-crm-sync-signature']);
      expect(signature).toMatch(/^v1=[0-9a-f]{64}$/);
      const expected = createHmac('sha256', SECRET)
        .update(Buffer.concat([Buffer.from(`${ts}.`, 'utf8'), r.raw]))
        .digest();
      expect(timingSafeEqual(Buffer.from(signature.slice(3), 'hex'), expected)).toBe(true);
      expect(JSON.stringify(r.headers)).not.toContain(SECRET);
    }
    expect(hook.delivered<GenericPayload>('/signed')).toEqual([
      expect.objectContaining({
        kind: 'stopped',
        runId: stopped.id,
        reason: stopped.error,
        counts: expect.objectContaining({ read: 0, created: 0 }),
      }),
    ]);

    // --force goes past it.
    const forced = await h.runJob('companies', { force: true });
    expect(forced.status).toBe('completed');
    expect(forced.counts).toMatchObject({ read: 0, created: 0, updated: 0 });
  });

  it('an alert given up after its last attempt is logged at error once, counted and noted on its run', async () => {
    const hook = await webhook(() => 500);
    hooks.push(hook);
    const { logger, lines } = captureLogger();
    const h = await engine({
      logger,
      env: {
        CRM_SYNC_ALERT_WEBHOOK: `${hook.url}/down`,
        CRM_SYNC_ALERT_ATTEMPTS: '3',
        CRM_SYNC_ALERT_BACKOFF_MS: '20',
      },
    });
    const droppedBefore = await droppedCount('stopped');
    // Every row lacks the required name's column: each run stops before writing and alerts.
    const header = HUBSPOT_HEADER.map((c) => (c === 'Company name' ? 'Name' : c));
    const path = h.writeCsv('companies.csv', header, companyRows(30).map(hubspotCells));
    h.writeJob('down', hubspotJob(path));
    // Its own webhook names a variable that is not set: no attempt can succeed.
    h.writeJob('unset', hubspotJob(path, { alerts: { webhook: '${UNSET_ALERT_HOOK}' } }));
    const down = await h.runJob('down');
    const unset = await h.runJob('unset');
    expect([down.status, unset.status]).toEqual(['stopped', 'stopped']);
    await alertsSettled(h);
    await until('both drops noted on their runs', async () => {
      const runs = await Promise.all([h.store.runs.get(down.id), h.store.runs.get(unset.id)]);
      return runs.every((r) => r?.alertUndelivered !== undefined);
    });

    expect(hook.received.map((r) => r.status)).toEqual([500, 500, 500]);
    // The alert worker's lines about the alert of each run.
    const about = (runId: string) =>
      lines.filter((l) => l.runId === runId && l.alert !== undefined);
    for (const [run, attempts] of [
      [down, 3],
      [unset, 1],
    ] as const) {
      const errors = about(run.id).filter((l) => l.level === 'error');
      expect(errors).toEqual([
        expect.objectContaining({
          msg: 'alert dropped: not delivered after its last attempt',
          alert: 'stopped',
          attempts,
        }),
      ]);
      // The attempts before the last say they will be tried again; the last does not.
      const warnings = about(run.id).filter((l) => l.level === 'warn');
      expect(warnings.map((l) => l.msg)).toEqual(
        Array(attempts - 1).fill('alert not delivered yet; BullMQ tries it again'),
      );
    }
    expect(await droppedCount('stopped')).toBe(droppedBefore + 2);

    const noted = await h.store.runs.get(down.id);
    expect(noted!.alertUndelivered).toMatch(
      /^the stopped alert was not delivered \(3 attempt\(s\)\): alert webhook at 127\.0\.0\.1:\d+ answered HTTP 500$/,
    );
    expect(runSummary(noted!).alertUndelivered).toBe(noted!.alertUndelivered);
    expect((await h.store.runs.get(unset.id))!.alertUndelivered).toBe(
      'the stopped alert was not delivered (1 attempt(s)): the alerts webhook names the environment variable UNSET_ALERT_HOOK, which is not set',
    );
    // The webhook's URL is in no log line.
    expect(JSON.stringify(lines)).not.toContain(`${hook.url}/down`);
  });
});
