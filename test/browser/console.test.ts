/**
 * The web console in a real browser (Debian's Chromium driven by
 * playwright-core) against a real worker, Redis and the platform sandbox:
 * the page asks for the ops token once, lists the jobs, starts a run after a
 * confirmation, follows it to its end, lists its failures and warnings
 * (filtered by kind, searched, every value shown as text), downloads them as
 * the CLI's CSV, previews a plan with its field diffs, and shows the jobs'
 * priorities and problems (an alerts webhook whose variable is not set) and
 * an alert that was not delivered, and pauses and resumes a job's schedule.
 *
 * With CONSOLE_SCREENSHOTS=<folder> it saves the screenshots the README
 * shows (docs/console.png, docs/console-run.png); otherwise they go to a
 * temporary folder and are only checked to be images.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startConsoleServer, type ConsoleServer } from '../harness/console-server.js';
import {
  startEngine,
  ACCOUNTS_HEADER as HEADER,
  ACCOUNTS_MAPPING as mapping,
  type EngineHarness,
} from '../harness/engine.js';

const CHROMIUM = '/usr/bin/chromium';
const TOKEN = 'console-test-token-0123456789abcdef';

// Enough plain rows that the run takes a few seconds at the test's rate limit.
const PLAIN = Array.from({ length: 60 }, (_, i) => [
  `CO-${i}`,
  `Company ${i}`,
  `company-${i}.example`,
  'false',
]);
const ROWS = [
  ['GLOBEX-1', 'Globex', 'info@globex.com', 'false'], // line 2: synced without website, a warning
  ['INITECH-1', 'Initech', 'initech.example', 'TRUE'], // line 3: skipped (deleted)
  ['<i>EVIL</i>', ' ', 'evil.example', 'false'], // line 4: invalid (no name); markup in its identity
  ...PLAIN,
];

let h: EngineHarness;
let ops: ConsoleServer;
let browser: Browser;
let page: Page;
let shots: string;
const pageErrors: string[] = [];
const downloads = mkdtempSync(join(tmpdir(), 'crm-sync-console-'));

beforeAll(async () => {
  if (!existsSync(CHROMIUM))
    throw new Error(
      `no Chromium at ${CHROMIUM}: install it with \`apt-get install -y chromium\` (.ci/run does)`,
    );
  shots = process.env.CONSOLE_SCREENSHOTS ?? downloads;
  h = await startEngine({ env: { PLATFORM_RATE_LIMIT: '25' } });
  const path = h.writeCsv('accounts.csv', HEADER, ROWS);
  h.writeJob('accounts', {
    entity: 'companies',
    source: { path },
    mapping,
    schedule: '0 2 * * *',
    timezone: 'Europe/Berlin',
    thresholds: { minRows: 0, maxInvalidShare: 0.25 },
  });
  ops = await startConsoleServer(h, { token: TOKEN });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  const context = await browser.newContext({
    acceptDownloads: true,
    viewport: { width: 1200, height: 860 },
    colorScheme: 'light',
  });
  page = await context.newPage();
  page.setDefaultTimeout(15_000);
  page.on('pageerror', (err) => pageErrors.push(err.message));
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await ops?.close();
  await h?.close();
  rmSync(downloads, { recursive: true, force: true });
});

describe('web console in Chromium', () => {
  it('asks for the token once, runs a job after confirming, shows its failures and downloads them', async () => {
    await page.goto(`${ops.url}/`);

    // The API answered 401: the page asks for the token and keeps it in this tab only.
    const tokenDialog = page.getByRole('dialog', { name: 'Ops token' });
    await expect.poll(() => tokenDialog.isVisible()).toBe(true);
    await page.getByRole('textbox', { name: 'Token' }).fill(TOKEN);
    await page.getByRole('button', { name: 'Sign in' }).click();

    const jobRow = page.getByRole('row').filter({ hasText: 'accounts' });
    await jobRow.first().waitFor();
    expect(await jobRow.first().textContent()).toContain('0 2 * * * Europe/Berlin');
    expect(await page.evaluate("sessionStorage.getItem('crm-sync.ops-token')")).toBe(TOKEN);
    expect(await page.evaluate('localStorage.length')).toBe(0);

    // Cancelling the confirmation starts nothing.
    await jobRow.getByRole('button', { name: 'Run now' }).click();
    const confirm = page.getByRole('dialog', { name: 'Run accounts now' });
    await confirm.waitFor();
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    // By keyboard too: Enter on the focused button opens it, Escape closes it.
    await jobRow.getByRole('button', { name: 'Run now' }).focus();
    await page.keyboard.press('Enter');
    await confirm.waitFor();
    await page.keyboard.press('Escape');
    await confirm.waitFor({ state: 'hidden' });
    expect((await h.store.runs.list({ limit: 10 })).length).toBe(0);

    await jobRow.getByRole('button', { name: 'Run now' }).click();
    await confirm.getByRole('button', { name: 'Start run' }).click();
    await page.waitForURL(/#\/runs\/.+/);
    const runId = decodeURIComponent(new URL(page.url()).hash.replace('#/runs/', ''));

    // The page follows the run to its end, with its progress.
    const statusCell = page.locator('dl.facts dd .status').first();
    await expect.poll(() => statusCell.textContent(), { timeout: 40_000 }).toBe('completed');
    const run = await h.store.runs.get(runId);
    expect(run?.status).toBe('completed');
    expect(run?.counts).toMatchObject({ created: 61, invalid: 1, skipped: 1, warnings: 1 });
    const settled = `${run!.counts.writesSettled} of ${run!.counts.writesPlanned} settled`;
    await expect.poll(() => page.getByText(settled).count()).toBe(1);
    expect(await page.locator('svg.chart polyline').count()).toBe(1);

    // Failures and warnings, every value as text.
    const failures = page.locator('section[aria-labelledby="failures-title"] tbody tr');
    await expect.poll(() => failures.count()).toBe(3);
    expect(await failures.allTextContents()).toEqual([
      expect.stringContaining('an e-mail address, not a website'),
      expect.stringContaining('deleted in the CRM (IsDeleted TRUE)'),
      expect.stringContaining('x:test:<i>EVIL</i>'),
    ]);
    expect(await page.locator('main i').count()).toBe(0);

    await page.getByLabel('Kind').selectOption('warning');
    await expect.poll(() => failures.count()).toBe(1);
    expect(await failures.first().textContent()).toContain('website');
    await page.getByLabel('Kind').selectOption('');
    await expect.poll(() => failures.count()).toBe(3);
    await page.getByLabel('Search').fill('evil');
    await expect.poll(() => failures.count()).toBe(1);
    expect(await failures.first().textContent()).toContain('missing: no value in column Name');
    await page.getByLabel('Search').fill('');

    // The CSV is the CLI's: its header, one row per failure.
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Download CSV' }).click(),
    ]);
    const file = join(downloads, 'failures.csv');
    await download.saveAs(file);
    const lines = readFileSync(file, 'utf8').trim().split(/\r?\n/);
    expect(lines[0]).toBe(
      'line,kind,field,reason,value,identity,record,survivor_line,survivor_record',
    );
    expect(lines.slice(1)).toEqual([
      expect.stringMatching(/^2,warning,website,/),
      expect.stringMatching(/^3,skipped,skip\.deleted,/),
      expect.stringMatching(/^4,invalid,name,.*x:test:<i>EVIL<\/i>/),
    ]);

    await page.screenshot({ path: join(shots, 'console-run.png'), fullPage: true });
    expect(readFileSync(join(shots, 'console-run.png')).subarray(1, 4).toString()).toBe('PNG');

    // Reloaded, the tab still has the token: no second prompt.
    await page.goto(`${ops.url}/#/`);
    await page.getByRole('row').filter({ hasText: 'accounts' }).first().waitFor();
    expect(await page.getByRole('dialog', { name: 'Ops token' }).isVisible()).toBe(false);
    expect(await page.getByRole('row').filter({ hasText: runId }).count()).toBeGreaterThan(0);
    await page.screenshot({ path: join(shots, 'console.png') });

    // The history, filtered by job and status through the form.
    await page.getByRole('link', { name: 'Runs', exact: true }).click();
    await page.getByRole('button', { name: 'Filter' }).waitFor();
    await page.getByLabel('Status').selectOption('failed');
    await page.getByRole('button', { name: 'Filter' }).click();
    await expect.poll(() => page.locator('main tbody td.empty').count()).toBe(1);
    await page.getByLabel('Job').fill('accounts');
    await page.getByLabel('Status').selectOption('completed');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.locator('main tbody tr').filter({ hasText: runId }).waitFor();
    const filters = new URLSearchParams(new URL(page.url()).hash.split('?')[1]);
    expect(Object.fromEntries(filters)).toEqual({ job: 'accounts', status: 'completed' });
    expect(pageErrors).toEqual([]);
  }, 60_000);

  it('previews a plan with the field diffs of the updates', async () => {
    // The export changes one name: the plan shows that update, field by field.
    const path = h.writeCsv(
      'accounts.csv',
      HEADER,
      ROWS.map((r) => (r[0] === 'CO-7' ? ['CO-7', 'Company Seven', r[2], r[3]] : r)),
    );
    expect(path).toContain('accounts.csv');
    await page.goto(`${ops.url}/#/jobs/accounts/plan`);
    // Against the stored index (hashes, not values) the update is there, without values.
    const update = page.getByRole('row').filter({ hasText: '#' });
    await update.first().waitFor({ timeout: 30_000 });
    expect(await update.count()).toBe(1);
    await page.getByRole('link', { name: 'list the platform again for field diffs' }).click();
    const diff = page.getByRole('row').filter({ hasText: 'Company Seven' });
    await diff.first().waitFor({ timeout: 30_000 });
    const cells = await diff.first().locator('td').allTextContents();
    expect(cells.slice(2)).toEqual(['name', 'Company 7', 'Company Seven']);
    expect(await page.getByRole('button', { name: 'Full backfill' }).count()).toBe(1);
    expect(pageErrors).toEqual([]);
  }, 45_000);
  it("follows a run's failures while it goes, and stops reading once it ends", async () => {
    // Every fifth row has a name the platform refuses (over 255 characters):
    // rejected one by one as the run writes, at the test's rate limit for seconds.
    const rows = Array.from({ length: 100 }, (_, i) => [
      `LIVE-${i}`,
      i % 5 === 4 ? `${'Long '.repeat(60)}${i}` : `Live ${i}`,
      `live-${i}.example`,
      'false',
    ]);
    const refused = rows.filter((r) => r[1]!.length > 255).length;
    const path = h.writeCsv('live.csv', HEADER, rows);
    h.writeJob('live', {
      entity: 'companies',
      source: { path },
      mapping,
      thresholds: { minRows: 0 },
    });
    const runId = await h.enqueue('live');
    const asked: string[] = [];
    const onRequest = (r: { url(): string }) => {
      if (r.url().includes(`/api/runs/${runId}`)) asked.push(r.url());
    };
    page.on('request', onRequest);
    await page.goto(`${ops.url}/#/runs/${encodeURIComponent(runId)}`);
    const shown = page.locator(
      'section[aria-labelledby="failures-title"] tbody tr:not(:has(td.empty))',
    );

    // The table as the page shows it, then the run's status in Redis: a row
    // counted before a status that has not ended was shown while the run went.
    const seen: { rows: number; status: string }[] = [];
    for (;;) {
      const count = await shown.count();
      const run = (await h.store.runs.get(runId))!;
      seen.push({ rows: count, status: run.status });
      if (['completed', 'failed', 'stopped', 'cancelled'].includes(run.status)) break;
      expect(seen.length, JSON.stringify(seen.slice(-3))).toBeLessThan(400);
      await new Promise((r) => setTimeout(r, 100));
    }
    const whileGoing = seen.filter((s) => s.status === 'writing' && s.rows > 0).map((s) => s.rows);
    // Seen growing before the end: at least two counts, the later the larger.
    expect(new Set(whileGoing).size, JSON.stringify(seen)).toBeGreaterThanOrEqual(2);
    expect(whileGoing).toEqual([...whileGoing].sort((a, b) => a - b));

    const run = (await h.store.runs.get(runId))!;
    expect(run.status).toBe('completed');
    expect(run.counts).toMatchObject({ read: 100, created: 100 - refused, rejected: refused });
    await expect.poll(() => shown.count()).toBe(refused);
    expect(await page.getByText(`${refused} of ${refused} rows shown`).count()).toBe(1);
    expect(await shown.first().textContent()).toContain(
      'Ensure this field has no more than 255 characters.',
    );
    // Once the page shows the end it reads the failures a last time, and the run no more.
    const statusCell = page.locator('dl.facts dd .status').first();
    await expect.poll(() => statusCell.textContent()).toBe('completed');
    const after = asked.length;
    await new Promise((r) => setTimeout(r, 1_500));
    const later = asked.slice(after).map((u) => new URL(u).pathname);
    expect(later.filter((p) => !p.endsWith('/failures'))).toEqual([]);
    expect(later.length).toBeLessThanOrEqual(1);
    page.off('request', onRequest);
    expect(pageErrors).toEqual([]);
  }, 45_000);

  it('cancels a run that has not ended after confirming; it then offers a retry', async () => {
    // A run record no worker has taken (not on the runs queue): the cancel ends it at once.
    const runId = await h.store.runs.create({
      job: 'accounts',
      entity: 'companies',
      mode: 'upsert',
      source: 'accounts.csv',
    });
    await page.goto(`${ops.url}/#/runs/${encodeURIComponent(runId)}`);
    const confirm = page.getByRole('dialog');
    await page.getByRole('button', { name: 'Cancel run' }).click();
    await confirm.getByRole('button', { name: 'Cancel', exact: true }).click();
    expect((await h.store.runs.get(runId))!.status).toBe('queued');
    await page.getByRole('button', { name: 'Cancel run' }).click();
    await confirm.getByRole('button', { name: 'Cancel run' }).click();
    await page.getByRole('button', { name: 'Retry' }).waitFor();
    expect((await h.store.runs.get(runId))!.status).toBe('cancelled');
    expect(await page.getByRole('button', { name: 'Cancel run' }).count()).toBe(0);
    expect(pageErrors).toEqual([]);
  }, 30_000);

  it("lists the jobs' problems and priorities and says when a run's alert was not delivered", async () => {
    // A job whose alerts webhook names a variable the worker does not have.
    h.writeJob('hooked', {
      entity: 'companies',
      source: { path: join(h.dir, 'accounts.csv') },
      mapping,
      priority: 7,
      alerts: { webhook: '${UNSET_CONSOLE_HOOK}' },
    });
    const [last] = await h.store.runs.list({ job: 'accounts', limit: 1 });
    const why =
      'the failed alert was not delivered (10 attempt(s)): alert webhook at hooks.example.com answered HTTP 500';
    await h.store.runs.update(last!.id, { alertUndelivered: why });
    try {
      await page.goto(`${ops.url}/#/`);
      const problems = page.getByRole('region', { name: 'Problems' });
      await problems.waitFor();
      expect(await problems.getByRole('listitem').allTextContents()).toEqual([
        `${join(h.jobsDir, 'hooked.yaml')}: alerts.webhook: the webhook names the environment variable UNSET_CONSOLE_HOOK, which is not set: this job's alerts cannot be delivered`,
      ]);
      // The job still loads and is listed; the one whose last run's alert was dropped says so.
      expect(await page.getByRole('row').filter({ hasText: 'hooked' }).count()).toBe(1);
      const accounts = page.getByRole('row').filter({ hasText: 'accounts' }).first();
      expect(await accounts.textContent()).toContain('alert not delivered');
      // Each job's priority in its own column: the file's, or 1 when it sets none.
      const jobs = page.locator('table').first();
      const column = (await jobs.locator('thead th').allTextContents()).indexOf('Priority');
      expect(column).toBeGreaterThan(0);
      const priority = (job: string) =>
        jobs.locator('tbody tr').filter({ hasText: job }).first().locator('td').nth(column);
      expect(await priority('hooked').textContent()).toBe('7');
      expect(await priority('accounts').textContent()).toBe('1');

      await page.goto(`${ops.url}/#/runs/${encodeURIComponent(last!.id)}`);
      await page.getByText(`Alert not delivered: ${why}`).waitFor();
      expect(pageErrors).toEqual([]);
    } finally {
      rmSync(join(h.jobsDir, 'hooked.yaml'));
    }
  }, 30_000);

  it("pauses and resumes a job's schedule after confirming, showing it paused", async () => {
    const key = `${h.prefix}:schedule:paused:accounts`;
    await page.goto(`${ops.url}/#/`);
    const row = page.getByRole('row').filter({ hasText: 'accounts' }).first();
    await row.waitFor();
    expect(await row.textContent()).not.toContain('paused');

    // Cancelled, nothing is paused.
    await row.getByRole('button', { name: 'Pause schedule' }).click();
    const pauseDialog = page.getByRole('dialog', { name: 'Pause the schedule of accounts' });
    await pauseDialog.waitFor();
    await pauseDialog.getByRole('button', { name: 'Cancel' }).click();
    await pauseDialog.waitFor({ state: 'hidden' });
    expect(await h.producer.redis.exists(key)).toBe(0);

    await row.getByRole('button', { name: 'Pause schedule' }).click();
    await pauseDialog.getByRole('button', { name: 'Pause schedule' }).click();
    await row.getByRole('button', { name: 'Resume schedule' }).waitFor();
    const paused = await h.producer.redis.hgetall(key);
    expect(paused.by).toBe('ops-api');
    const since = await row.locator('.paused').textContent();
    expect(since).toMatch(/^paused since /);
    expect(since).not.toContain('—');
    expect(await row.locator('.paused').getAttribute('title')).toBe('paused by ops-api');

    await row.getByRole('button', { name: 'Resume schedule' }).click();
    const resumeDialog = page.getByRole('dialog', { name: 'Resume the schedule of accounts' });
    await resumeDialog.getByRole('button', { name: 'Resume schedule' }).click();
    await row.getByRole('button', { name: 'Pause schedule' }).waitFor();
    expect(await h.producer.redis.exists(key)).toBe(0);
    expect(await row.textContent()).not.toContain('paused');
    expect(pageErrors).toEqual([]);
  }, 30_000);
});
