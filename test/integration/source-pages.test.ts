/**
 * Paginated URL sources against the local CRM emulator: every way of paging
 * reads each record once, in order, numbered across pages; the headers go to
 * the source's origin only; transient faults on a page (429 with Retry-After,
 * 503, a dropped connection, a page cut short) are tried again and cost
 * nothing; a page that keeps failing, a foreign next link, a loop and a
 * redirect end the read with an error naming the page.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { SourceRow } from '../../src/crm/row.js';
import type { SourceSpec } from '../../src/crm/source-spec.js';
import {
  closeLeads,
  dataverseAccounts,
  hubspotCompanies,
  pipedriveOrganizations,
  salesforceAccounts,
  startCrmEmulator,
  zohoAccounts,
  type CrmEmulator,
} from '../harness/crm-emulator.js';
import { readAll, readError } from './source-helpers.js';

const TOKEN = 'crm-page-token-1c9e4f';
const env = { CRM_PAGES_TOKEN: TOKEN };
const auth = { Authorization: 'Bearer ${CRM_PAGES_TOKEN}' };
// Fast backoff: the tests check what is tried again, not how long it waits.
const retry = { minDelayMs: 5, maxDelayMs: 2_000 };

const open: CrmEmulator[] = [];
async function emulator(pageSize = 3): Promise<CrmEmulator> {
  const e = await startCrmEmulator({ pageSize });
  open.push(e);
  return e;
}
afterEach(async () => {
  await Promise.all(open.splice(0).map((e) => e.close()));
});

function records(rows: SourceRow[]): Record<string, unknown>[] {
  return rows.map((r) => {
    if (!('record' in r)) throw new Error(`line ${r.line}: ${r.problem}`);
    return r.record;
  });
}

const read = (spec: Partial<SourceSpec>) => readAll(spec as SourceSpec, { env, batchSize: 2 });

describe('paginated sources: each way of paging', () => {
  it('hubspot: the after cursor on the first URL, its properties kept on every page', async () => {
    const crm = await emulator();
    crm.data.hubspotCompanies = hubspotCompanies(7);
    const rows = await read({
      url: `${crm.url}/crm/v3/objects/companies?limit=3&properties=name,domain`,
      paginate: 'hubspot',
      headers: auth,
    });
    expect(rows.map((r) => r.line)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(records(rows)).toEqual(crm.data.hubspotCompanies.map((r) => r.body));
    expect(crm.requests).toHaveLength(3);
    for (const r of crm.requests) {
      expect(r.path).toMatch(/^\/crm\/v3\/objects\/companies\?limit=3&properties=name,domain/);
      expect(r.headers.authorization).toBe(`Bearer ${TOKEN}`);
    }
    expect(new URL(crm.requests[2]!.path, crm.url).searchParams.getAll('after')).toEqual([
      btoa('6'),
    ]);
  });

  it('recordPath: each record of every page taken from under its key', async () => {
    const crm = await emulator();
    crm.data.hubspotCompanies = hubspotCompanies(5);
    const rows = await read({
      url: `${crm.url}/crm/v3/objects/companies?limit=3`,
      paginate: 'hubspot',
      recordPath: 'properties',
    });
    expect(rows.map((r) => r.line)).toEqual([1, 2, 3, 4, 5]);
    expect(records(rows)).toEqual(crm.data.hubspotCompanies.map((r) => r.body.properties));
  });

  it('next link: HubSpot paging.next.link followed as given', async () => {
    const crm = await emulator();
    crm.data.hubspotCompanies = hubspotCompanies(5);
    const rows = await read({
      url: `${crm.url}/crm/v3/objects/companies?limit=3`,
      paginate: { next: 'paging.next.link' },
      recordsPath: 'results',
    });
    expect(records(rows).map((r) => r.id)).toEqual(crm.data.hubspotCompanies.map((r) => r.body.id));
    expect(crm.requests.map((r) => r.path)).toEqual([
      '/crm/v3/objects/companies?limit=3',
      `/crm/v3/objects/companies?after=${encodeURIComponent(btoa('3'))}`,
    ]);
  });

  it('salesforce: nextRecordsUrl relative to the origin, until done', async () => {
    const crm = await emulator();
    crm.data.salesforceAccounts = salesforceAccounts(8);
    const rows = await read({
      url: `${crm.url}/services/data/v60.0/query?q=SELECT+Id,Name,Website+FROM+Account`,
      paginate: 'salesforce',
    });
    expect(records(rows).map((r) => r.Id)).toEqual(
      crm.data.salesforceAccounts.map((r) => r.body.Id),
    );
    expect(rows.at(-1)?.line).toBe(8);
    expect(crm.requests).toHaveLength(3);
    expect(crm.requests[1]!.path).toMatch(/^\/services\/data\/v60\.0\/query\/[\w-]+-3$/);
  });

  it('pipedrive (next_start → start), close (has_more, _skip), dataverse (@odata.nextLink), zoho (page)', async () => {
    const crm = await emulator();
    crm.data.pipedriveOrganizations = pipedriveOrganizations(7);
    crm.data.closeLeads = closeLeads(6);
    crm.data.dataverseAccounts = dataverseAccounts(4);
    crm.data.zohoAccounts = zohoAccounts(5);
    const ids = (rows: SourceRow[], key: string) => records(rows).map((r) => r[key]);
    const want = (list: { body: Record<string, unknown> }[], key: string) =>
      list.map((r) => r.body[key]);

    const pd = await read({
      url: `${crm.url}/v1/organizations?start=0&limit=3`,
      paginate: 'pipedrive',
    });
    expect(ids(pd, 'id')).toEqual(want(crm.data.pipedriveOrganizations, 'id'));
    const close = await read({ url: `${crm.url}/api/v1/lead/?_limit=2`, paginate: 'close' });
    expect(ids(close, 'id')).toEqual(want(crm.data.closeLeads, 'id'));
    const dv = await read({ url: `${crm.url}/api/data/v9.2/accounts`, paginate: 'dataverse' });
    expect(ids(dv, 'accountid')).toEqual(want(crm.data.dataverseAccounts, 'accountid'));
    const zoho = await read({
      url: `${crm.url}/crm/v2/Accounts?per_page=2`,
      paginate: { hasMore: 'info.more_records', pageParam: 'page' },
      recordsPath: 'data',
    });
    expect(ids(zoho, 'id')).toEqual(want(crm.data.zohoAccounts, 'id'));
    expect(crm.requests.map((r) => r.path)).toEqual([
      '/v1/organizations?start=0&limit=3',
      '/v1/organizations?start=3&limit=3',
      '/v1/organizations?start=6&limit=3',
      '/api/v1/lead/?_limit=2',
      '/api/v1/lead/?_limit=2&_skip=2',
      '/api/v1/lead/?_limit=2&_skip=4',
      '/api/data/v9.2/accounts',
      '/api/data/v9.2/accounts?$skiptoken=3',
      '/crm/v2/Accounts?per_page=2',
      '/crm/v2/Accounts?per_page=2&page=2',
      '/crm/v2/Accounts?per_page=2&page=3',
    ]);
  });

  it('a 204 is a page with nothing, and the last', async () => {
    const crm = await emulator();
    crm.data.closeLeads = closeLeads(5);
    crm.fault({ page: 1, kind: 204 });
    expect(await read({ url: `${crm.url}/api/v1/lead/`, paginate: 'close' })).toEqual([]);
    expect(crm.requests).toHaveLength(1);
  });

  it('reads the token from the environment it is given, never from process.env', async () => {
    const crm = await emulator();
    crm.data.closeLeads = closeLeads(2);
    const spec = { url: `${crm.url}/api/v1/lead/`, paginate: 'close', headers: auth } as const;
    process.env.CRM_PAGES_TOKEN = 'token-of-the-process-7a';
    process.env.CRM_SOURCE_AUTHORIZATION = 'Bearer process-wide-7a';
    try {
      expect(await read(spec)).toHaveLength(2);
      expect(crm.requests.map((r) => r.headers.authorization)).toEqual([`Bearer ${TOKEN}`]);
      const err = await readError(spec as SourceSpec);
      expect(err.message).toContain(
        'names the environment variable CRM_PAGES_TOKEN, which is not set',
      );
      expect(crm.requests).toHaveLength(1);
    } finally {
      delete process.env.CRM_PAGES_TOKEN;
      delete process.env.CRM_SOURCE_AUTHORIZATION;
    }
  });

  it('an element that is not an object is a problem row with its number; the rest are read', async () => {
    const crm = await emulator();
    crm.data.closeLeads = closeLeads(4);
    crm.data.closeLeads[2] = { modified: 0, body: 'lead' as unknown as Record<string, unknown> };
    const rows = await read({ url: `${crm.url}/api/v1/lead/`, paginate: 'close' });
    expect(rows[2]).toEqual({ line: 3, problem: 'not a JSON object (a string)' });
    expect(rows.filter((r) => 'record' in r)).toHaveLength(3);
  });
});

describe('paginated sources: faults on a page', () => {
  it('a 429 with Retry-After (seconds) is waited out and the page read once', async () => {
    const crm = await emulator();
    crm.data.hubspotCompanies = hubspotCompanies(9);
    crm.fault({ page: 2, kind: 429, retryAfter: '1' });
    const rows = await read({
      url: `${crm.url}/crm/v3/objects/companies?limit=3`,
      paginate: 'hubspot',
      retry,
    });
    expect(records(rows).map((r) => r.id)).toEqual(crm.data.hubspotCompanies.map((r) => r.body.id));
    expect(crm.requests).toHaveLength(4);
    const [, limited, again] = crm.requests;
    expect(again!.path).toBe(limited!.path);
    // The server asked for a second; the retry did not come sooner.
    expect(again!.at - limited!.at).toBeGreaterThanOrEqual(990);
  });

  it('a 429 with an HTTP-date Retry-After, a 503, a dropped connection, a cut, empty or stalled page and a 408 are tried again', async () => {
    const crm = await emulator();
    crm.data.salesforceAccounts = salesforceAccounts(15);
    crm.fault({ page: 1, kind: 429, retryAfter: new Date(Date.now() - 1000).toUTCString() });
    crm.fault({ page: 2, kind: 503 });
    crm.fault({ page: 3, kind: 'destroy' });
    crm.fault({ page: 4, kind: 'cut', times: 2 });
    crm.fault({ page: 5, kind: 408 });
    crm.fault({ page: 5, kind: 'empty' });
    crm.fault({ page: 5, kind: 'stall' });
    const rows = await read({
      url: `${crm.url}/services/data/v60.0/query?q=SELECT+Id+FROM+Account`,
      paginate: 'salesforce',
      retry,
      // A stalled page is given up after this long without data, and fetched again.
      timeoutMs: 300,
    });
    expect(rows.map((r) => r.line)).toEqual(Array.from({ length: 15 }, (_, i) => i + 1));
    expect(records(rows).map((r) => r.Id)).toEqual(
      crm.data.salesforceAccounts.map((r) => r.body.Id),
    );
    expect(crm.requests).toHaveLength(5 + 5 + 3);
  });

  it('a page that keeps failing ends the read naming the page and the status, after the attempts', async () => {
    const crm = await emulator();
    crm.data.hubspotCompanies = hubspotCompanies(9);
    crm.fault({ page: 2, kind: 503, times: Infinity });
    const err = await readError(
      {
        url: `${crm.url}/crm/v3/objects/companies?limit=3`,
        paginate: 'hubspot',
        retry: { ...retry, attempts: 3 },
      },
      { env },
    );
    expect(err.code).toBe('source.http-status');
    expect(err.statusCode).toBe(503);
    expect(err.message).toBe(
      `${crm.url}/crm/v3/objects/companies?…: page 2: GET answered HTTP 503 Service Unavailable; gave up after 3 attempts`,
    );
    expect(crm.requests).toHaveLength(1 + 3);
  });

  it('a 401 or a redirect is not tried again; a cut page that stays cut is a JSON error', async () => {
    const crm = await emulator();
    crm.data.closeLeads = closeLeads(5);
    crm.fault({ page: 1, kind: 401 });
    const spec = { url: `${crm.url}/api/v1/lead/`, paginate: 'close', retry } as const;
    expect((await readError(spec, { env })).detail).toBe(
      'page 1: GET answered HTTP 401 Unauthorized',
    );
    expect(crm.requests).toHaveLength(1);
    crm.fault({ page: 1, kind: 302 });
    expect((await readError(spec, { env })).detail).toBe(
      "page 1: GET answered HTTP 302 Found, a redirect (not followed: the source's headers stay on its origin)",
    );
    expect(crm.requests).toHaveLength(2);
    crm.fault({ page: 2, kind: 'cut', times: Infinity });
    const cut = await readError({ ...spec, retry: { ...retry, attempts: 2 } }, { env });
    expect(cut.code).toBe('source.json');
    expect(cut.detail).toMatch(
      /^page 2: the page is not valid JSON \(cut short\?\): .*; gave up after 2 attempts$/,
    );
  });
});

describe('paginated sources: where the next page may be', () => {
  it('a next link to another origin is refused after the first page; nothing is sent there', async () => {
    const crm = await emulator();
    const other = await emulator();
    crm.data.dataverseAccounts = dataverseAccounts(6);
    crm.linkOrigin = other.url;
    const err = await readError(
      { url: `${crm.url}/api/data/v9.2/accounts`, paginate: 'dataverse', headers: auth },
      { env },
    );
    expect(err.code).toBe('source.pagination');
    expect(err.detail).toBe(
      `page 1: refused the next page on another origin (http:${other.url.slice(5)}): the source's headers are for ${crm.url} only`,
    );
    expect(err.message).not.toContain('skiptoken');
    expect(crm.requests).toHaveLength(1);
    expect(other.requests).toEqual([]);
  });

  it('a next link back to a page already read is a loop, refused', async () => {
    const crm = await emulator();
    crm.data.salesforceAccounts = salesforceAccounts(9);
    crm.rewrite = (body, page) =>
      page === 2
        ? { ...body, nextRecordsUrl: '/services/data/v60.0/query?q=SELECT+Id+FROM+Account' }
        : body;
    const err = await readError(
      {
        url: `${crm.url}/services/data/v60.0/query?q=SELECT+Id+FROM+Account`,
        paginate: 'salesforce',
      },
      { env },
    );
    expect(err.detail).toBe('page 2: the next page points back to a page already read');
    expect(crm.requests).toHaveLength(2);
  });
});
