/**
 * Whole runs that pull straight from a CRM's list API (the local CRM
 * emulator) into the platform sandbox: pages followed with faults on the way
 * (every record synced once), a page that fails for good (the run fails
 * before any platform write, nothing enqueued), a next link to another origin
 * (refused, the token never sent there), page counts (Freshsales) and POST
 * searches (Copper) with a 429 and a page cut short, and incremental pulls
 * with `{{since}}` (the next run asks for what changed since the last one
 * began).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { sinceText } from '../../src/crm/since.js';
import { activeRunId } from '../../src/queue/queues.js';
import type { RunRecord } from '../../src/state/runs.js';
import {
  copperCompanies,
  freshsalesAccounts,
  hubspotCompanies,
  salesforceAccounts,
  sfTime,
  startCrmEmulator,
  type CrmEmulator,
} from '../harness/crm-emulator.js';
import {
  countWrites,
  useEngines,
  type Dump,
  type EngineHarness,
  type EngineOptions,
} from '../harness/engine.js';

const engines = useEngines();
const TOKEN = 'crm-pull-token-83b1d0';
const retry = { minDelayMs: 5, maxDelayMs: 2_000 };

// The worker reads the job's `${VAR}` references from the environment its config was loaded from.
const engine = (opts: EngineOptions = {}) =>
  engines({ ...opts, env: { ENGINE_TEST_CRM_TOKEN: TOKEN, ...opts.env } });

const open: CrmEmulator[] = [];
async function emulator(pageSize = 3): Promise<CrmEmulator> {
  const e = await startCrmEmulator({ pageSize });
  open.push(e);
  return e;
}
afterEach(async () => {
  await Promise.all(open.splice(0).map((e) => e.close()));
});

const auth = { Authorization: 'Bearer ${ENGINE_TEST_CRM_TOKEN}' };

function hubspotJob(url: string, paginate: unknown = 'hubspot'): Record<string, unknown> {
  return {
    entity: 'companies',
    source: { url, paginate, headers: auth, retry },
    mapping: 'hubspot-companies',
  };
}

function salesforceJob(url: string): Record<string, unknown> {
  return {
    entity: 'companies',
    source: { url, paginate: 'salesforce', headers: auth, retry },
    mapping: 'salesforce-accounts',
  };
}

/** The platform's companies by external_id; a duplicate fails the test. */
function byExternalId(dump: Dump): Map<string, Record<string, unknown>> {
  const out = new Map<string, Record<string, unknown>>();
  for (const c of dump.companies) {
    const id = String(c.external_id);
    expect(out.has(id), `duplicate company ${id}`).toBe(false);
    out.set(id, c);
  }
  return out;
}

/**
 * Runs the job once its previous run's queue job has ended too: the run
 * record completes a moment before BullMQ releases the job's deduplication
 * key, and a run enqueued in between would attach to the finished one.
 */
async function runAgain(
  h: EngineHarness,
  name: string,
  opts: { full?: boolean } = {},
): Promise<RunRecord> {
  while ((await activeRunId(h.producer.runQueue, name)) !== null) await sleep(20);
  return h.runJob(name, opts);
}

/** Waits for the clock's next whole second. */
async function nextSecond(): Promise<void> {
  await sleep(1_000 - (Date.now() % 1_000) + 5);
}

async function writeQueueJobs(h: EngineHarness): Promise<number> {
  const counts = await h.service!.writeQueue.getJobCounts();
  return Object.values(counts).reduce((a, b) => a + b, 0);
}

describe('engine: pulling from a CRM API', () => {
  it('HubSpot, 3 pages with a 429 on page 2: every company synced once, the token on every page', async () => {
    const h = await engine();
    const crm = await emulator();
    crm.data.hubspotCompanies = hubspotCompanies(8);
    crm.fault({ page: 2, kind: 429, retryAfter: '1' });
    h.writeJob('companies', hubspotJob(`${crm.url}/crm/v3/objects/companies?limit=3`));

    const run = await h.runJob('companies');
    expect(run.error).toBeUndefined();
    expect(run.status).toBe('completed');
    expect(run.counts).toMatchObject({ read: 8, created: 8, invalid: 0, failed: 0 });
    const found = byExternalId(await h.dump());
    expect([...found.keys()].sort()).toEqual(
      crm.data.hubspotCompanies.map((c) => `hubspot:company:${String(c.body.id)}`).sort(),
    );
    expect(found.get('hubspot:company:406260751575')).toMatchObject({
      name: 'Company 0 Inc',
      crm_company_id: 406260751575,
    });
    // Pages 1, 2 (429), 2, 3.
    expect(crm.requests).toHaveLength(4);
    expect(crm.requests[2]!.path).toBe(crm.requests[1]!.path);
    for (const r of crm.requests) expect(r.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(await h.redisText()).not.toContain(TOKEN);
  });

  it('Salesforce, nextRecordsUrl and a connection dropped mid-page: every account synced once', async () => {
    const h = await engine();
    const crm = await emulator(4);
    crm.data.salesforceAccounts = salesforceAccounts(10);
    crm.fault({ page: 2, kind: 'destroy' });
    h.writeJob(
      'accounts',
      salesforceJob(`${crm.url}/services/data/v60.0/query?q=SELECT+Id,Name,Website+FROM+Account`),
    );

    const run = await h.runJob('accounts');
    expect(run.error).toBeUndefined();
    expect(run.counts).toMatchObject({ read: 10, created: 10, invalid: 0 });
    const found = byExternalId(await h.dump());
    expect([...found.keys()].sort()).toEqual(
      crm.data.salesforceAccounts.map((a) => `salesforce:${String(a.body.Id)}`).sort(),
    );
    expect(crm.requests).toHaveLength(4);
  });

  it('a page that fails for good fails the run before any platform write; nothing is enqueued', async () => {
    const h = await engine({ settings: { batchSize: 2 } });
    const crm = await emulator();
    crm.data.hubspotCompanies = hubspotCompanies(9);
    crm.fault({ page: 3, kind: 503, times: Infinity });
    h.writeJob('companies', {
      ...hubspotJob(`${crm.url}/crm/v3/objects/companies?limit=3`),
      source: {
        url: `${crm.url}/crm/v3/objects/companies?limit=3`,
        paginate: 'hubspot',
        retry: { ...retry, attempts: 2 },
      },
    });

    const run = await h.runJob('companies');
    expect(run.status).toBe('failed');
    expect(run.error).toBe(
      `${crm.url}/crm/v3/objects/companies?…: page 3: GET answered HTTP 503 Service Unavailable; gave up after 2 attempts`,
    );
    // Pages 1 and 2 were planned (in batches of 2) before page 3 failed: still no write.
    expect(countWrites(await h.stats())).toBe(0);
    expect((await h.dump()).companies).toEqual([]);
    expect(await writeQueueJobs(h)).toBe(0);
    expect(crm.requests).toHaveLength(2 + 2);
  });

  it('a next link to another origin fails the run; the token is never sent there', async () => {
    const h = await engine();
    const crm = await emulator();
    const other = await emulator();
    crm.data.hubspotCompanies = hubspotCompanies(6);
    other.data.hubspotCompanies = hubspotCompanies(6);
    crm.linkOrigin = other.url;
    h.writeJob(
      'companies',
      hubspotJob(`${crm.url}/crm/v3/objects/companies?limit=3`, { next: 'paging.next.link' }),
    );

    const run = await h.runJob('companies');
    expect(run.status).toBe('failed');
    expect(run.error).toContain(
      `page 1: refused the next page on another origin (http://${new URL(other.url).host})`,
    );
    expect(other.requests).toEqual([]);
    expect(crm.requests).toHaveLength(1);
    expect(countWrites(await h.stats())).toBe(0);
  });
});

describe('engine: page counts and POST searches', () => {
  it('Freshsales, meta.total_pages with a 429 on page 2 and page 3 cut short: every account once', async () => {
    const h = await engine();
    const crm = await emulator();
    crm.data.freshsalesAccounts = freshsalesAccounts(8);
    crm.fault({ page: 2, kind: 429, retryAfter: '1' });
    crm.fault({ page: 3, kind: 'cut' });
    h.writeJob('accounts', {
      entity: 'companies',
      source: {
        url: `${crm.url}/crm/sales/api/sales_accounts/view/1?per_page=3`,
        paginate: 'freshsales',
        recordsPath: 'sales_accounts',
        headers: { Authorization: 'Token token=${ENGINE_TEST_CRM_TOKEN}' },
        retry,
      },
      mapping: 'freshsales-accounts',
    });

    const run = await h.runJob('accounts');
    expect(run.error).toBeUndefined();
    expect(run.counts).toMatchObject({ read: 8, created: 8, invalid: 0, failed: 0 });
    const found = byExternalId(await h.dump());
    expect([...found.keys()].sort()).toEqual(
      crm.data.freshsalesAccounts.map((a) => `freshsales:account:${String(a.body.id)}`).sort(),
    );
    expect(found.get('freshsales:account:17001321830')).toMatchObject({
      name: 'Account 0 (sample)',
      website: 'https://account-0.example',
    });
    // Pages 1, 2 (429), 2, 3 (cut), 3; none after the third of three pages.
    expect(crm.requests.map((r) => new URL(r.path, crm.url).searchParams.get('page'))).toEqual([
      null,
      '2',
      '2',
      '3',
      '3',
    ]);
    for (const r of crm.requests) {
      expect(r.method).toBe('GET');
      expect(r.headers.authorization).toBe(`Token token=${TOKEN}`);
    }
    expect(await h.redisText()).not.toContain(TOKEN);
  });

  it('Copper, POST search with page_number in the body until an empty page, a 429 and a cut page: every company once', async () => {
    const h = await engine();
    const crm = await emulator();
    crm.data.copperCompanies = copperCompanies(8);
    crm.fault({ page: 2, kind: 429, retryAfter: '1' });
    crm.fault({ page: 3, kind: 'cut' });
    h.writeJob('companies', {
      entity: 'companies',
      source: {
        url: `${crm.url}/developer_api/v1/companies/search`,
        paginate: {
          method: 'POST',
          body: { page_size: 3, sort_by: 'name' },
          pageParam: 'page_number',
          untilEmpty: true,
        },
        headers: {
          'X-PW-AccessToken': '${ENGINE_TEST_CRM_TOKEN}',
          'X-PW-UserEmail': 'ops@example.com',
          'X-PW-Application': 'developer_api',
        },
        retry,
      },
      mapping: 'copper-companies',
    });

    const run = await h.runJob('companies');
    expect(run.error).toBeUndefined();
    expect(run.counts).toMatchObject({ read: 8, created: 8, invalid: 0, failed: 0 });
    const found = byExternalId(await h.dump());
    expect([...found.keys()].sort()).toEqual(
      crm.data.copperCompanies.map((c) => `copper:company:${String(c.body.id)}`).sort(),
    );
    expect(found.get('copper:company:35015568')).toMatchObject({
      name: 'Company 1',
      website: 'https://company-1.example/',
    });
    // Pages 1, 2 (429), 2, 3 (cut), 3 and the empty page 4 that ends the search.
    expect(crm.requests.map((r) => [r.method, r.path, JSON.parse(r.body) as unknown])).toEqual(
      [undefined, 2, 2, 3, 3, 4].map((n) => [
        'POST',
        '/developer_api/v1/companies/search',
        { page_size: 3, sort_by: 'name', ...(n !== undefined && { page_number: n }) },
      ]),
    );
    for (const r of crm.requests) {
      expect(r.headers['content-type']).toBe('application/json');
      expect(r.headers['x-pw-accesstoken']).toBe(TOKEN);
    }
    expect(await h.redisText()).not.toContain(TOKEN);
  });

  it('a search that ignores the page number fails the run instead of asking for ever', async () => {
    const h = await engine();
    const crm = await emulator();
    crm.data.copperCompanies = copperCompanies(8);
    crm.copperPageKey = 'page';
    h.writeJob('companies', {
      entity: 'companies',
      source: {
        url: `${crm.url}/developer_api/v1/companies/search`,
        paginate: {
          method: 'POST',
          body: { page_size: 3 },
          pageParam: 'page_number',
          untilEmpty: true,
        },
        headers: { 'X-PW-AccessToken': '${ENGINE_TEST_CRM_TOKEN}' },
        retry,
      },
      mapping: 'copper-companies',
    });

    const run = await h.runJob('companies');
    expect(run.status).toBe('failed');
    // The source is named by origin and path (a header value met in the path is shown redacted).
    expect(run.error?.startsWith(crm.url)).toBe(true);
    expect(run.error).toMatch(
      /\/v1\/companies\/search: page 2: the page repeats the records of page 1: does the API read "page_number"\?$/,
    );
    expect(crm.requests).toHaveLength(2);
    expect(countWrites(await h.stats())).toBe(0);
  });
});

describe('engine: incremental pulls with {{since}}', () => {
  const soql = 'SELECT+Id,Name,Website+FROM+Account+WHERE+LastModifiedDate>{{since}}';
  const qOf = (path: string) => new URL(path, 'http://x').searchParams.get('q');

  it('the next run asks for the changes since the last run began; --full reads everything', async () => {
    const h = await engine();
    const crm = await emulator(10);
    crm.data.salesforceAccounts = salesforceAccounts(25);
    h.writeJob('accounts', salesforceJob(`${crm.url}/services/data/v60.0/query?q=${soql}`));
    const edit = (i: number, name: string) => {
      const a = crm.data.salesforceAccounts[i]!;
      a.modified = Date.now();
      a.body = { ...a.body, Name: name, LastModifiedDate: sfTime(a.modified) };
    };

    // First run: no earlier run, so the filter reaches back to 1970.
    const first = await h.runJob('accounts');
    expect(first.counts).toMatchObject({ read: 25, created: 25 });
    expect(qOf(crm.requests[0]!.path)).toBe(
      'SELECT Id,Name,Website FROM Account WHERE LastModifiedDate>1970-01-01T00:00:00Z',
    );

    // Every account changed: the pull holds only changes, so the change share
    // (25 of 25, above the default 0.5) does not stop the run, and the
    // accounts it did not read are no orphans.
    for (let i = 0; i < 25; i++) edit(i, `Renamed ${i}`);
    // The pull asks from the start of a run rounded down to the second; edits
    // in the second the next run starts are read again by the run after it.
    await nextSecond();
    let seen = crm.requests.length;
    const second = await runAgain(h, 'accounts');
    expect(second.id).not.toBe(first.id);
    expect(second.error).toBeUndefined();
    expect(second.status).toBe('completed');
    expect(qOf(crm.requests[seen]!.path)).toBe(
      `SELECT Id,Name,Website FROM Account WHERE LastModifiedDate>${sinceText(new Date(first.startedAt!))}`,
    );
    expect(second.counts).toMatchObject({ read: 25, updated: 25 });

    edit(3, 'Third time');
    edit(17, 'Seventeenth');
    seen = crm.requests.length;
    const third = await runAgain(h, 'accounts');
    expect(qOf(crm.requests[seen]!.path)).toContain(
      `LastModifiedDate>${sinceText(new Date(second.startedAt!))}`,
    );
    expect(third.counts).toMatchObject({ read: 2, updated: 2, orphans: 0 });
    const names = [...byExternalId(await h.dump()).values()].map((c) => c.name);
    expect(names).toContain('Third time');
    expect(names).toContain('Seventeenth');

    seen = crm.requests.length;
    const full = await runAgain(h, 'accounts', { full: true });
    expect(qOf(crm.requests[seen]!.path)).toMatch(/LastModifiedDate>1970-01-01T00:00:00Z$/);
    expect(full.counts).toMatchObject({ read: 25, unchanged: 25 });
  });
});
