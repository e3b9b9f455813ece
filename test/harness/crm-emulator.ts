/**
 * A small local CRM for the tests of paginated sources: an HTTP server on
 * 127.0.0.1 (port 0) serving the list APIs of several CRMs in their real
 * shapes (HubSpot v3 objects and owners, Salesforce REST query, Pipedrive v1,
 * Close, Dataverse, Zoho v2, Freshsales views with `meta.total_pages`, Copper
 * searches by POST), a page at a time, with faults scripted per page: a
 * status (429 with Retry-After, 503, …), a connection destroyed mid-page, a
 * page cut short (truncated JSON, sent whole). Every request is recorded with
 * its headers and body, so tests can check where a token went.
 *
 * The records are plain arrays a test can edit between runs; `modified`
 * (epoch ms) is what Salesforce's `LastModifiedDate > …` filter compares.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { salesforceChecksum } from '../../src/crm/salesforce-id.js';

export interface SeenRequest {
  method: string;
  /** Path and query as sent. */
  path: string;
  headers: IncomingMessage['headers'];
  /** The request body as text ('' for none). */
  body: string;
  /** When it came (Date.now()). */
  at: number;
}

export interface Fault {
  /** Requests whose path starts with this; default: any. */
  path?: string;
  /** The page (1-based) it strikes. */
  page: number;
  /**
   * An HTTP status (204 with no body); `destroy`: the socket is cut mid-body;
   * `cut`: a truncated JSON body, sent whole; `empty`: a 200 with no body;
   * `stall`: half the body, then nothing more until the client gives up.
   */
  kind: number | 'destroy' | 'cut' | 'empty' | 'stall';
  /** `Retry-After` to send with a status. */
  retryAfter?: string;
  /** How many requests it strikes (default 1; Infinity: for good). */
  times?: number;
}

/** A record of any of the CRMs, with the time it was last modified. */
export interface CrmRecord {
  modified: number;
  body: Record<string, unknown>;
}

export interface CrmEmulator {
  url: string;
  /** Records per page (each API's `limit` in the query wins where it has one). */
  pageSize: number;
  /** Where absolute next links point (default: this server); another emulator's URL to test refusal. */
  linkOrigin: string;
  data: {
    hubspotCompanies: CrmRecord[];
    hubspotOwners: CrmRecord[];
    salesforceAccounts: CrmRecord[];
    pipedriveOrganizations: CrmRecord[];
    closeLeads: CrmRecord[];
    dataverseAccounts: CrmRecord[];
    zohoAccounts: CrmRecord[];
    freshsalesAccounts: CrmRecord[];
    copperCompanies: CrmRecord[];
  };
  /** The key of a Copper search body that holds the page number (another: an API that ignores it). */
  copperPageKey: string;
  requests: SeenRequest[];
  /** Changes a page body before it is sent (a loop, a foreign link, …). */
  rewrite?: (body: Record<string, unknown>, page: number, path: string) => Record<string, unknown>;
  fault(f: Fault): void;
  close(): Promise<void>;
}

const SF_QUERY = '/services/data/v60.0/query';

export async function startCrmEmulator(opts: { pageSize?: number } = {}): Promise<CrmEmulator> {
  const faults: (Fault & { left: number })[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      try {
        serve(req, res, Buffer.concat(chunks).toString('utf8'));
      } catch (err) {
        res.writeHead(500).end(String(err));
      }
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const emu: CrmEmulator = {
    url,
    pageSize: opts.pageSize ?? 3,
    linkOrigin: url,
    data: {
      hubspotCompanies: [],
      hubspotOwners: [],
      salesforceAccounts: [],
      pipedriveOrganizations: [],
      closeLeads: [],
      dataverseAccounts: [],
      zohoAccounts: [],
      freshsalesAccounts: [],
      copperCompanies: [],
    },
    copperPageKey: 'page_number',
    requests: [],
    fault: (f) => faults.push({ ...f, left: f.times ?? 1 }),
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };

  function serve(req: IncomingMessage, res: ServerResponse, text: string): void {
    emu.requests.push({
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      headers: req.headers,
      body: text,
      at: Date.now(),
    });
    const u = new URL(req.url ?? '/', url);
    const page = answer(u, req.method ?? 'GET', text);
    if (!page) {
      send(res, 404, { message: `no route ${u.pathname}` });
      return;
    }
    const fault = faults.find(
      (f) => f.left > 0 && f.page === page.number && u.pathname.startsWith(f.path ?? ''),
    );
    if (fault) fault.left--;
    const body =
      emu.rewrite && !Array.isArray(page.body)
        ? emu.rewrite(page.body, page.number, u.pathname)
        : page.body;
    const json = JSON.stringify(body);
    if (fault?.kind === 'stall') {
      res.writeHead(200, {
        'Content-Type': 'application/json',
        'Content-Length': Buffer.byteLength(json),
      });
      res.write(json.slice(0, json.length >> 1));
      return;
    }
    if (fault?.kind === 'empty') {
      send(res, 200, undefined, '');
      return;
    }
    if (fault?.kind === 204) {
      res.writeHead(204).end();
      return;
    }
    if (fault?.kind === 'destroy') {
      // Headers and half the body, then the connection is gone.
      res.writeHead(200, {
        'Content-Type': 'application/json',
        'Content-Length': Buffer.byteLength(json),
      });
      res.write(json.slice(0, json.length >> 1), () => res.socket?.destroy());
      return;
    }
    if (fault?.kind === 'cut') {
      send(res, 200, undefined, json.slice(0, json.length >> 1));
      return;
    }
    if (typeof fault?.kind === 'number') {
      const headers = fault.retryAfter ? { 'Retry-After': fault.retryAfter } : undefined;
      send(res, fault.kind, { status: fault.kind, message: 'fault injected' }, undefined, headers);
      return;
    }
    send(res, 200, body);
  }

  /** The page a request asks for, or undefined for an unknown route. */
  function answer(
    u: URL,
    method: string,
    text: string,
  ): { number: number; body: Record<string, unknown> | unknown[] } | undefined {
    const q = u.searchParams;
    const size = (param: string) => Number(q.get(param) ?? emu.pageSize) || emu.pageSize;
    const slice = (list: CrmRecord[], from: number, n: number) => {
      const items = list.slice(from, from + n).map((r) => r.body);
      return { items, more: from + n < list.length, number: Math.floor(from / n) + 1 };
    };
    const p = u.pathname;
    if (p === '/crm/v3/objects/companies' || p === '/crm/v3/owners') {
      const list = p === '/crm/v3/owners' ? emu.data.hubspotOwners : emu.data.hubspotCompanies;
      const n = size('limit');
      const from = q.has('after') ? Number(atob(q.get('after') ?? '')) : 0;
      const s = slice(list, from, n);
      // HubSpot's cursor is opaque text; its link repeats no parameter but `after`.
      const after = btoa(String(from + n));
      const next = { after, link: `${emu.linkOrigin}${p}?after=${encodeURIComponent(after)}` };
      return { number: s.number, body: { results: s.items, ...(s.more && { paging: { next } }) } };
    }
    if (p === SF_QUERY || p.startsWith(`${SF_QUERY}/`)) {
      const locator = p.slice(SF_QUERY.length + 1);
      const [key = '', offset = '0'] = locator.split('-');
      const soql = locator === '' ? (q.get('q') ?? '') : Buffer.from(key, 'base64url').toString();
      const from = locator === '' ? 0 : Number(offset);
      const since = /LastModifiedDate\s*>\s*(\S+)/i.exec(soql)?.[1];
      const list = emu.data.salesforceAccounts.filter(
        (r) => since === undefined || r.modified > Date.parse(since),
      );
      const s = slice(list, from, emu.pageSize);
      const nextPath = `${SF_QUERY}/${Buffer.from(soql).toString('base64url')}-${from + emu.pageSize}`;
      const nextRecordsUrl = emu.linkOrigin === url ? nextPath : `${emu.linkOrigin}${nextPath}`;
      return {
        number: s.number,
        body: {
          totalSize: list.length,
          done: !s.more,
          ...(s.more && { nextRecordsUrl }),
          records: s.items,
        },
      };
    }
    if (p === '/v1/organizations') {
      const n = size('limit');
      const from = Number(q.get('start') ?? 0);
      const s = slice(emu.data.pipedriveOrganizations, from, n);
      const pagination = {
        start: from,
        limit: n,
        more_items_in_collection: s.more,
        ...(s.more && { next_start: from + n }),
      };
      // Pipedrive answers `data: null` when a page has nothing.
      const data = s.items.length > 0 ? s.items : null;
      return { number: s.number, body: { success: true, data, additional_data: { pagination } } };
    }
    if (p === '/api/v1/lead/') {
      const n = size('_limit');
      const s = slice(emu.data.closeLeads, Number(q.get('_skip') ?? 0), n);
      return {
        number: s.number,
        body: { data: s.items, has_more: s.more, total_results: emu.data.closeLeads.length },
      };
    }
    if (p === '/api/data/v9.2/accounts') {
      const from = Number(q.get('$skiptoken') ?? 0);
      const s = slice(emu.data.dataverseAccounts, from, emu.pageSize);
      const link = `${emu.linkOrigin}${p}?$skiptoken=${from + emu.pageSize}`;
      return {
        number: s.number,
        body: {
          '@odata.context': `${url}/api/data/v9.2/$metadata#accounts`,
          value: s.items,
          ...(s.more && { '@odata.nextLink': link }),
        },
      };
    }
    if (p === '/crm/v2/Accounts') {
      const n = size('per_page');
      const pageNo = Number(q.get('page') ?? 1);
      const s = slice(emu.data.zohoAccounts, (pageNo - 1) * n, n);
      const info = { per_page: n, count: s.items.length, page: pageNo, more_records: s.more };
      return { number: pageNo, body: { data: s.items, info } };
    }
    if (p === '/crm/sales/api/sales_accounts/view/1') {
      // Freshsales views: `?page=` from 1, `per_page`; the page count in `meta`.
      const n = size('per_page');
      const pageNo = Number(q.get('page') ?? 1);
      const list = emu.data.freshsalesAccounts;
      const s = slice(list, (pageNo - 1) * n, n);
      const meta = { total_pages: Math.ceil(list.length / n), total: list.length };
      return { number: pageNo, body: { sales_accounts: s.items, meta } };
    }
    if (p === '/developer_api/v1/companies/search' && method === 'POST') {
      // Copper searches: `{page_number, page_size}` in a JSON body, a bare array back.
      const search = JSON.parse(text || '{}') as Record<string, unknown>;
      const n = Number(search.page_size ?? 20);
      const pageNo = Number(search[emu.copperPageKey] ?? 1);
      const s = slice(emu.data.copperCompanies, (pageNo - 1) * n, n);
      return { number: pageNo, body: s.items };
    }
    return undefined;
  }

  return emu;
}

function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  raw?: string,
  headers: Record<string, string> = {},
): void {
  const text = raw ?? JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

// ---- records in each CRM's shape ------------------------------------------------

const BASE_TIME = Date.parse('2024-01-10T10:36:45.123Z');

/** HubSpot v3 company objects, ids counting from `firstId` (12 digits, as strings). */
export function hubspotCompanies(n: number, firstId = 406_260_751_575): CrmRecord[] {
  return Array.from({ length: n }, (_, i) => {
    const id = String(firstId + i);
    const at = new Date(BASE_TIME + i * 1000).toISOString();
    return {
      modified: BASE_TIME + i * 1000,
      body: {
        id,
        properties: {
          createdate: at,
          domain: `company-${i}.example`,
          hs_lastmodifieddate: at,
          hs_object_id: id,
          name: `Company ${i} Inc`,
          city: i % 2 === 0 ? 'Berlin' : null,
        },
        createdAt: at,
        updatedAt: at,
        archived: false,
      },
    };
  });
}

/** HubSpot owners (`/crm/v3/owners`). */
export function hubspotOwners(n: number, firstId = 32_900_489): CrmRecord[] {
  return Array.from({ length: n }, (_, i) => ({
    modified: BASE_TIME,
    body: {
      id: String(firstId + i),
      email: `owner-${i}@example.com`,
      type: 'PERSON',
      firstName: 'Owner',
      lastName: `Number ${i}`,
      userId: firstId + i,
      createdAt: new Date(BASE_TIME).toISOString(),
      updatedAt: new Date(BASE_TIME).toISOString(),
      archived: false,
    },
  }));
}

/** A valid 18-character Account id (`001…` with its checksum). */
export function salesforceAccountId(i: number): string {
  const id15 = `001dM00003${String(i).padStart(5, '0')}`;
  return id15 + salesforceChecksum(id15);
}

/** Salesforce Account records of a REST query, with `attributes`. */
export function salesforceAccounts(n: number): CrmRecord[] {
  return Array.from({ length: n }, (_, i) => {
    const id = salesforceAccountId(i);
    return {
      modified: BASE_TIME,
      body: {
        attributes: { type: 'Account', url: `/services/data/v60.0/sobjects/Account/${id}` },
        Id: id,
        Name: `Account ${i} Corp`,
        Website: `www.account-${i}.example`,
        Industry: 'Apparel',
        BillingCity: 'Burlington',
        LastModifiedDate: sfTime(BASE_TIME),
      },
    };
  });
}

/** Salesforce's date-time form, `2024-01-10T10:36:45.000+0000`. */
export function sfTime(ms: number): string {
  return new Date(ms).toISOString().replace('Z', '+0000');
}

/** Pipedrive v1 organizations (integer ids, owner as an object). */
export function pipedriveOrganizations(n: number): CrmRecord[] {
  return Array.from({ length: n }, (_, i) => ({
    modified: BASE_TIME,
    body: {
      id: i + 1,
      owner_id: { id: 25760681, name: 'Owner', email: 'owner@example.com', value: 25760681 },
      name: `Organization ${i}`,
      company_id: 777,
      active_flag: true,
      update_time: '2024-01-10 10:36:45',
    },
  }));
}

/** Close leads (`lead_…` ids). */
export function closeLeads(n: number): CrmRecord[] {
  return Array.from({ length: n }, (_, i) => ({
    modified: BASE_TIME,
    body: {
      id: `lead_${String(i).padStart(6, '0')}`,
      name: `Lead ${i}`,
      display_name: `Lead ${i}`,
    },
  }));
}

/** Dataverse accounts (GUID ids, annotation keys with dots). */
export function dataverseAccounts(n: number): CrmRecord[] {
  return Array.from({ length: n }, (_, i) => ({
    modified: BASE_TIME,
    body: {
      '@odata.etag': `W/"${81359849 + i}"`,
      name: `Account ${i}`,
      '_ownerid_value@OData.Community.Display.V1.FormattedValue': 'Owner',
      accountid: `78914942-34cb-ed11-b596-${String(i).padStart(12, '0')}`,
    },
  }));
}

/** Zoho v2 accounts (19-digit ids as text). */
export function zohoAccounts(n: number): CrmRecord[] {
  return Array.from({ length: n }, (_, i) => ({
    modified: BASE_TIME,
    body: { id: `7328395000000${680055 + i}`, Account_Name: `Account ${i}` },
  }));
}

/** Freshsales sales accounts (integer ids beyond 2^32, `website` without a scheme). */
export function freshsalesAccounts(n: number, firstId = 17_001_321_830): CrmRecord[] {
  return Array.from({ length: n }, (_, i) => ({
    modified: BASE_TIME,
    body: {
      id: firstId + i,
      name: `Account ${i} (sample)`,
      website: i % 2 === 0 ? `account-${i}.example` : null,
      owner_id: 17_000_038_922,
      is_deleted: false,
      updated_at: '2023-03-23T05:26:56-06:00',
    },
  }));
}

/** Copper companies of a search answer (`websites` a list of `{url, category}`). */
export function copperCompanies(n: number, firstId = 35_015_567): CrmRecord[] {
  return Array.from({ length: n }, (_, i) => ({
    modified: BASE_TIME,
    body: {
      id: firstId + i,
      name: `Company ${i}`,
      address: {
        street: null,
        city: `City${i}`,
        state: 'New York',
        postal_code: null,
        country: null,
      },
      assignee_id: null,
      email_domain: `company-${i}.example`,
      websites: i % 3 === 0 ? [] : [{ url: `https://company-${i}.example/`, category: 'work' }],
      date_modified: 1558441535 + i,
    },
  }));
}
