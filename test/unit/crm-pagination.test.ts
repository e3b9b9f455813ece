/**
 * The pure rules of paginated sources: the `paginate` option and its presets,
 * paths into a page body, the next page's URL for each way of paging, the
 * origin and loop checks, and `{{since}}` in a URL.
 */
import { describe, expect, it } from 'vitest';
import {
  PAGINATION_PRESETS,
  PaginateSpec,
  checkNext,
  firstRequest,
  nextPage,
  nextRequest,
  pageRecords,
  pageRules,
  requestKey,
  valueAt,
  withKey,
  withParam,
  type PageRules,
  type PageState,
} from '../../src/crm/pagination.js';
import { SourceError } from '../../src/crm/source-error.js';
import { SourceSpecSchema } from '../../src/crm/source-spec.js';
import { hasSince, sinceText, withSince } from '../../src/crm/since.js';

const at = { source: 'https://crm.example/list', page: 1 };

function state(url: string, first: string, page = 1, pageRecords = 2, records = 2): PageState {
  return {
    source: at.source,
    page,
    url: new URL(url),
    first: new URL(first),
    pageRecords,
    records,
  };
}

function thrown(fn: () => unknown): SourceError {
  try {
    fn();
  } catch (err) {
    if (err instanceof SourceError) return err;
    throw err;
  }
  throw new Error('expected a SourceError');
}

describe('paths into a page', () => {
  it('walks dotted keys, and takes a key holding a dot whole where the object has it', () => {
    const body = {
      '@odata.nextLink': 'https://org.crm.dynamics.com/api/data/v9.2/accounts?$skiptoken=x',
      paging: { next: { after: '101' } },
      additional_data: { pagination: { next_start: 100 } },
    };
    expect(valueAt(body, '@odata.nextLink')).toBe(body['@odata.nextLink']);
    expect(valueAt(body, 'paging.next.after')).toBe('101');
    expect(valueAt(body, 'additional_data.pagination.next_start')).toBe(100);
    expect(valueAt(body, 'paging.prev.before')).toBeUndefined();
    expect(valueAt({ a: 'text' }, 'a.length')).toBeUndefined();
    expect(valueAt({ a: [1] }, 'a.0')).toBeUndefined();
  });

  it('finds the records at the preset path, recordsPath, or the usual keys; null is an empty page', () => {
    const rules = pageRules('pipedrive');
    expect(pageRecords({ data: [{ id: 1 }] }, rules, at)).toEqual([{ id: 1 }]);
    expect(pageRecords({ data: null, additional_data: {} }, rules, at)).toEqual([]);
    expect(pageRecords({ value: [{ a: 1 }] }, pageRules({ next: 'next' }), at)).toEqual([{ a: 1 }]);
    expect(
      pageRecords({ out: { rows: [{ a: 1 }] } }, pageRules({ next: 'next' }, 'out.rows'), at),
    ).toEqual([{ a: 1 }]);
    const missing = thrown(() => pageRecords({ errors: ['bad'] }, rules, at));
    expect(missing.code).toBe('source.pagination');
    expect(missing.message).toBe(
      'https://crm.example/list: page 1: expected the records array at "data", found nothing',
    );
    expect(thrown(() => pageRecords({ message: 'x' }, pageRules({ next: 'n' }), at)).detail).toBe(
      'page 1: no records array under results, records, data, items, value (set recordsPath), found an object',
    );
  });
});

describe('presets', () => {
  it('stand for the rules of each CRM, records path included; recordsPath given wins', () => {
    expect(pageRules('hubspot')).toEqual({
      kind: 'cursor',
      cursor: 'paging.next.after',
      param: 'after',
      recordsPath: 'results',
    });
    expect(pageRules('salesforce')).toEqual({
      kind: 'next',
      next: 'nextRecordsUrl',
      done: 'done',
      recordsPath: 'records',
    });
    expect(pageRules('dataverse').recordsPath).toBe('value');
    expect(pageRules('close')).toMatchObject({ kind: 'offset', param: '_skip' });
    expect(pageRules('hubspot', 'items').recordsPath).toBe('items');
    // A preset is not changed by what a job did with it.
    expect(PAGINATION_PRESETS.hubspot.recordsPath).toBe('results');
  });

  it('freshsales counts pages, copper searches by POST until a page is empty', () => {
    expect(pageRules('freshsales', 'sales_accounts')).toEqual({
      kind: 'page',
      totalPages: 'meta.total_pages',
      param: 'page',
      recordsPath: 'sales_accounts',
    });
    expect(pageRules('copper')).toEqual({
      kind: 'page',
      untilEmpty: true,
      param: 'page_number',
      post: { page_size: 200 },
    });
    expect(
      pageRules({
        method: 'POST',
        body: { page_size: 50, sort_by: 'name' },
        untilEmpty: true,
        pageParam: 'page_number',
      }),
    ).toEqual({
      kind: 'page',
      untilEmpty: true,
      param: 'page_number',
      post: { page_size: 50, sort_by: 'name' },
    });
    // POST without a body sends an empty object; GET is the default.
    expect(pageRules({ method: 'POST', cursor: 'next', param: 'after' })).toMatchObject({
      post: {},
    });
    expect(pageRules({ method: 'GET', untilEmpty: true, offsetParam: 'offset' })).toEqual({
      kind: 'offset',
      untilEmpty: true,
      param: 'offset',
    });
  });

  it('options written out become the same rules', () => {
    expect(pageRules({ next: '@odata.nextLink' })).toEqual({
      kind: 'next',
      next: '@odata.nextLink',
    });
    expect(pageRules({ cursor: 'info.next_page_token', param: 'page_token' })).toEqual({
      kind: 'cursor',
      cursor: 'info.next_page_token',
      param: 'page_token',
    });
    expect(pageRules({ hasMore: 'has_more', offsetParam: '_skip' })).toEqual({
      kind: 'offset',
      hasMore: 'has_more',
      param: '_skip',
    });
    expect(pageRules({ hasMore: 'info.more_records', pageParam: 'page' })).toEqual({
      kind: 'page',
      hasMore: 'info.more_records',
      param: 'page',
    });
  });
});

describe('the paginate option', () => {
  const issues = (value: unknown): string[] => {
    const r = PaginateSpec.safeParse(value);
    return r.success ? [] : r.error.issues.map((i) => i.message);
  };

  it('takes a preset name or one way of paging', () => {
    for (const ok of [
      'hubspot',
      'salesforce',
      { next: 'nextRecordsUrl', done: 'done' },
      { cursor: 'additional_data.pagination.next_start', param: 'start' },
      { hasMore: 'has_more', offsetParam: '_skip' },
      { hasMore: 'info.more_records', pageParam: 'page' },
    ]) {
      expect(issues(ok), JSON.stringify(ok)).toEqual([]);
    }
  });

  it('refuses unknown presets, two ways at once, and options that do not go together', () => {
    expect(issues('hubspt').join()).toMatch(/a preset \(hubspot, salesforce, .*\)/);
    const messages = (v: unknown) => JSON.stringify(PaginateSpec.safeParse(v).error?.issues);
    expect(messages({ next: 'a', cursor: 'b', param: 'c' })).toContain(
      'give exactly one of next, cursor, hasMore, totalPages or untilEmpty',
    );
    expect(messages({ cursor: 'paging.next.after' })).toContain('cursor and param go together');
    expect(messages({ hasMore: 'has_more' })).toContain(
      'hasMore needs exactly one of offsetParam or pageParam',
    );
    expect(messages({ next: 'n', offsetParam: '_skip' })).toContain(
      'offsetParam and pageParam go with hasMore, totalPages or untilEmpty',
    );
    expect(messages({ cursor: 'c', param: 'a&b' })).toContain('must be a query parameter name');
    expect(messages({ next: 'a..b' })).toContain('must be a dotted path');
  });

  it('takes page counts, pages until an empty one, and POST searches with a body', () => {
    for (const ok of [
      'freshsales',
      'copper',
      { totalPages: 'meta.total_pages', pageParam: 'page' },
      { untilEmpty: true, pageParam: 'page' },
      { untilEmpty: true, offsetParam: 'offset' },
      { method: 'POST', body: { page_size: 200 }, untilEmpty: true, pageParam: 'page_number' },
      { method: 'POST', body: { limit: 100 }, cursor: 'paging.next.after', param: 'after' },
      { method: 'POST', hasMore: 'has_more', offsetParam: 'paging.offset' },
      { method: 'GET', totalPages: 'meta.total_pages', pageParam: 'page' },
    ]) {
      expect(issues(ok), JSON.stringify(ok)).toEqual([]);
    }
    const messages = (v: unknown) =>
      (PaginateSpec.safeParse(v).error?.issues ?? []).map(
        (i) => `${i.path.join('.')}: ${i.message}`,
      );
    expect(messages({ totalPages: 'meta.total_pages', offsetParam: 'offset' })).toEqual([
      ': totalPages counts pages: it goes with pageParam, not offsetParam',
    ]);
    expect(messages({ totalPages: 'meta.total_pages' })).toEqual([
      ': totalPages needs exactly one of offsetParam or pageParam',
    ]);
    expect(messages({ untilEmpty: false, pageParam: 'page' })[0]).toMatch(/^untilEmpty: /);
    expect(messages({ hasMore: 'more', totalPages: 'pages', pageParam: 'page' })).toEqual([
      ': give exactly one of next, cursor, hasMore, totalPages or untilEmpty',
    ]);
    expect(messages({ body: { page_size: 200 }, untilEmpty: true, pageParam: 'page' })).toEqual([
      'body: body goes with method: POST (a GET sends no body)',
    ]);
    expect(messages({ method: 'POST', next: 'next' })).toEqual([
      'method: next follows the link a page gives, by GET: method POST goes with cursor, hasMore, totalPages or untilEmpty',
    ]);
    expect(messages({ method: 'POST', untilEmpty: true, pageParam: 'paging..page' })).toEqual([
      'pageParam: must be a dotted path into the body such as "page_number" or "paging.after"',
    ]);
    expect(messages({ method: 'PUT', untilEmpty: true, pageParam: 'page' })[0]).toMatch(
      /^method: /,
    );
    expect(messages({ method: 'POST', body: ['a'], untilEmpty: true, pageParam: 'p' })[0]).toMatch(
      /^body: /,
    );
    // The body is sent as written: a credential in it would sit in the job file.
    expect(
      messages({
        method: 'POST',
        body: { page_size: 10, api_key: 'abc', auth: { user: 'u' }, filter: { session_id: 'x' } },
        untilEmpty: true,
        pageParam: 'page',
      }),
    ).toEqual(
      ['api_key', 'auth', 'filter.session_id'].map(
        (k) =>
          `body: ${k} looks like a credential: the body is written out as it is; send credentials in a header with a \${VAR} reference`,
      ),
    );
  });

  it('needs a url and JSON; retry needs paginate', () => {
    const bad = (s: Record<string, unknown>) =>
      SourceSpecSchema.safeParse(s).error?.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    expect(bad({ path: 'x.json', paginate: 'hubspot' })).toContain(
      'paginate: paginate needs a url',
    );
    expect(bad({ url: 'https://a.example/x', paginate: 'hubspot', format: 'csv' })).toContain(
      'format: a paginated source reads JSON pages: leave format out or set json',
    );
    expect(bad({ url: 'https://a.example/x', retry: { attempts: 3 } })).toContain(
      'retry: retry applies to paginated sources (each page is tried again on its own)',
    );
    expect(
      bad({ url: 'https://a.example/x', paginate: 'close', retry: { attempts: 0 } })?.[0],
    ).toMatch(/^retry.attempts: /);
    expect(
      SourceSpecSchema.safeParse({
        url: 'https://a.example/x',
        paginate: 'close',
        format: 'json',
        retry: { attempts: 3, minDelayMs: 10, maxDelayMs: 100 },
      }).success,
    ).toBe(true);
  });
});

describe('the next page', () => {
  const first = 'https://api.example/crm/v3/objects/companies?limit=2&properties=name,domain';

  it('next: an absolute link, or one relative to the page (Salesforce), until absent or done', () => {
    const sf = pageRules('salesforce');
    const page =
      'https://acme.my.salesforce.com/services/data/v60.0/query?q=SELECT+Id+FROM+Account';
    const next = nextPage(
      { done: false, nextRecordsUrl: '/services/data/v60.0/query/01gD0000002HU6KIAW-2000' },
      sf,
      state(page, page),
    );
    expect(next?.href).toBe(
      'https://acme.my.salesforce.com/services/data/v60.0/query/01gD0000002HU6KIAW-2000',
    );
    expect(nextPage({ done: true, nextRecordsUrl: '/x' }, sf, state(page, page))).toBeNull();
    expect(nextPage({ done: true }, sf, state(page, page))).toBeNull();
    const dv = pageRules('dataverse');
    expect(nextPage({ value: [], '@odata.nextLink': null }, dv, state(page, page))).toBeNull();
    expect(thrown(() => nextPage({ '@odata.nextLink': 5 }, dv, state(page, page))).detail).toBe(
      'page 1: the next page at "@odata.nextLink" is a number, not a URL',
    );
  });

  it('cursor: set on the first URL, its other parameters kept as written, until absent', () => {
    const hs = pageRules('hubspot');
    const next = nextPage(
      { paging: { next: { after: 'NTI1Cg==', link: 'https://api.example/x?after=NTI1Cg%3D%3D' } } },
      hs,
      state(first, first),
    );
    expect(next?.href).toBe(
      'https://api.example/crm/v3/objects/companies?limit=2&properties=name,domain&after=NTI1Cg%3D%3D',
    );
    // The third page replaces the cursor of the second.
    const third = nextPage({ paging: { next: { after: '4' } } }, hs, state(next!.href, first, 2));
    expect(third?.searchParams.getAll('after')).toEqual(['4']);
    expect(nextPage({ results: [] }, hs, state(first, first))).toBeNull();
    const pd = pageRules('pipedrive');
    const start = 'https://co.pipedrive.com/api/v1/organizations?start=0&limit=100';
    expect(
      nextPage(
        { additional_data: { pagination: { more_items_in_collection: true, next_start: 100 } } },
        pd,
        state(start, start),
      )?.href,
    ).toBe('https://co.pipedrive.com/api/v1/organizations?start=100&limit=100');
    expect(
      thrown(() => nextPage({ paging: { next: { after: {} } } }, hs, state(first, first))).detail,
    ).toBe('page 1: the cursor at "paging.next.after" is an object');
  });

  it('offset and page number: while the flag is true, counted from the first URL', () => {
    const close = pageRules('close');
    const u = 'https://api.close.com/api/v1/lead/?_limit=2&_skip=0';
    expect(nextPage({ has_more: true }, close, state(u, u, 1, 2, 2))?.href).toBe(
      'https://api.close.com/api/v1/lead/?_limit=2&_skip=2',
    );
    expect(
      nextPage({ has_more: true }, close, state(u, u, 3, 2, 6))?.searchParams.get('_skip'),
    ).toBe('6');
    expect(nextPage({ has_more: false }, close, state(u, u))).toBeNull();
    const zoho: PageRules = pageRules({ hasMore: 'info.more_records', pageParam: 'page' });
    const z = 'https://www.zohoapis.eu/crm/v2/Accounts?per_page=200';
    expect(nextPage({ info: { more_records: true } }, zoho, state(z, z, 1))?.href).toBe(
      'https://www.zohoapis.eu/crm/v2/Accounts?per_page=200&page=2',
    );
    expect(
      nextPage({ info: { more_records: true } }, zoho, state(z, z, 2))?.searchParams.get('page'),
    ).toBe('3');
    // A flag that stays true on an empty page would ask for ever.
    expect(thrown(() => nextPage({ has_more: true }, close, state(u, u, 4, 0, 6))).detail).toBe(
      'page 4: "has_more" says there are more records, but the page had none',
    );
  });

  it('page count: the next page number until the last one (Freshsales meta.total_pages)', () => {
    const fs = pageRules('freshsales', 'sales_accounts');
    const u = 'https://acme.myfreshworks.com/crm/sales/api/sales_accounts/view/1?per_page=2';
    const meta = (total: unknown) => ({ sales_accounts: [{}, {}], meta: { total_pages: total } });
    expect(nextPage(meta(3), fs, state(u, u, 1))?.href).toBe(`${u}&page=2`);
    expect(nextPage(meta(3), fs, state(u, u, 2))?.searchParams.get('page')).toBe('3');
    expect(nextPage(meta(3), fs, state(u, u, 3))).toBeNull();
    expect(nextPage(meta(1), fs, state(u, u, 1))).toBeNull();
    expect(nextPage(meta(0), fs, state(u, u, 1, 0, 0))).toBeNull();
    // Counted from the first URL's own page: page=2 first, 3 pages in all.
    const from2 = `${u}&page=2`;
    expect(nextPage(meta(3), fs, state(from2, from2, 1))?.searchParams.get('page')).toBe('3');
    expect(nextPage(meta(3), fs, state(from2, from2, 2))).toBeNull();
    expect(thrown(() => nextPage({ sales_accounts: [] }, fs, state(u, u, 1))).detail).toBe(
      'page 1: the page count at "meta.total_pages" is missing, not a whole number',
    );
    expect(thrown(() => nextPage(meta('3'), fs, state(u, u, 1))).detail).toBe(
      'page 1: the page count at "meta.total_pages" is a string, not a whole number',
    );
  });

  it('until empty: the next page while the last one had records', () => {
    const rules = pageRules({ untilEmpty: true, offsetParam: 'offset' });
    const u = 'https://api.example/list?limit=2';
    expect(nextPage([{}, {}], rules, state(u, u, 1, 2, 2))?.href).toBe(`${u}&offset=2`);
    expect(nextPage([{}], rules, state(u, u, 2, 1, 3))?.searchParams.get('offset')).toBe('3');
    expect(nextPage([], rules, state(u, u, 3, 0, 3))).toBeNull();
  });

  it('POST: the page number or cursor is written into the first body, on the first URL', () => {
    const copper = pageRules('copper');
    const u = 'https://api.copper.com/developer_api/v1/companies/search';
    const first = firstRequest(new URL(u), copper);
    expect(first).toEqual({ url: new URL(u), body: { page_size: 200 } });
    const second = nextRequest([{ id: 1 }], copper, state(u, u, 1, 1, 1));
    expect(second).toEqual({ url: new URL(u), body: { page_size: 200, page_number: 2 } });
    expect(nextRequest([{ id: 2 }], copper, state(u, u, 2, 1, 2))?.body).toEqual({
      page_size: 200,
      page_number: 3,
    });
    expect(nextRequest([], copper, state(u, u, 3, 0, 2))).toBeNull();
    // The preset's body is never changed.
    expect(PAGINATION_PRESETS.copper.post).toEqual({ page_size: 200 });
    // Counted from the body's own page number.
    const from3 = pageRules({
      method: 'POST',
      body: { page_number: 3, page_size: 10 },
      untilEmpty: true,
      pageParam: 'page_number',
    });
    expect(nextRequest([{}], from3, state(u, u, 1))?.body).toEqual({
      page_number: 4,
      page_size: 10,
    });
    // A cursor into a nested key, kept as the page gave it (HubSpot's search).
    const hs = pageRules({
      method: 'POST',
      body: { limit: 100, filterGroups: [] },
      cursor: 'paging.next.after',
      param: 'paging.after',
    });
    const s = 'https://api.hubapi.com/crm/v3/objects/companies/search';
    expect(nextRequest({ paging: { next: { after: '100' } } }, hs, state(s, s))).toEqual({
      url: new URL(s),
      body: { limit: 100, filterGroups: [], paging: { after: '100' } },
    });
    expect(nextRequest({ results: [] }, hs, state(s, s))).toBeNull();
    // GET rules give no body.
    const close = pageRules('close');
    const c = 'https://api.close.com/api/v1/lead/?_limit=2';
    expect(firstRequest(new URL(c), close)).toEqual({ url: new URL(c) });
    expect(nextRequest({ has_more: true }, close, state(c, c, 1, 2, 2))).toEqual({
      url: new URL(`${c}&_skip=2`),
    });
  });

  it('withKey sets a dotted key in a copy', () => {
    const body = { a: 1, paging: { size: 2 } };
    expect(withKey(body, 'paging.after', 'x')).toEqual({ a: 1, paging: { size: 2, after: 'x' } });
    expect(withKey(body, 'b.c', 3)).toEqual({ a: 1, paging: { size: 2 }, b: { c: 3 } });
    expect(body).toEqual({ a: 1, paging: { size: 2 } });
  });

  it('withParam changes only the one parameter, encoding its value', () => {
    const u = new URL('https://a.example/q?q=SELECT+Id%2CName&after=1&x=%3E');
    expect(withParam(u, 'after', 'a b/c').href).toBe(
      'https://a.example/q?q=SELECT+Id%2CName&after=a%20b%2Fc&x=%3E',
    );
    expect(withParam(new URL('https://a.example/q'), 'page', '2').href).toBe(
      'https://a.example/q?page=2',
    );
  });
});

describe('checkNext', () => {
  const origin = 'https://api.example';

  it('refuses another origin (scheme, host or port) and userinfo, naming no query', () => {
    for (const next of [
      'https://evil.example/list?token=abc',
      'http://api.example/list',
      'https://api.example:8443/list',
      'https://user:pw@api.example/list',
    ]) {
      const err = thrown(() => checkNext(new URL(next), origin, new Set(), at));
      expect(err.code).toBe('source.pagination');
      expect(err.message).toMatch(/page 1: refused the next page on another origin/);
      expect(err.message).not.toContain('token');
      expect(err.message).not.toContain('pw');
    }
  });

  it('refuses a page already read (a loop), and passes a new one on the origin', () => {
    const seen = new Set(['https://api.example/list?after=2']);
    expect(
      thrown(() => checkNext(new URL('https://api.example/list?after=2'), origin, seen, at)).detail,
    ).toBe('page 1: the next page points back to a page already read');
    expect(() =>
      checkNext(new URL('https://api.example/list?after=3'), origin, seen, at),
    ).not.toThrow();
  });
});

describe('requestKey', () => {
  it('tells POST pages apart by their body, so a repeated body is a loop', () => {
    const u = new URL('https://api.copper.com/developer_api/v1/companies/search');
    const a = requestKey({ url: u, body: { page_number: 2 } });
    const b = requestKey({ url: u, body: { page_number: 3 } });
    expect(a).not.toBe(b);
    expect(requestKey({ url: u })).toBe(u.href);
    const seen = new Set([a]);
    expect(thrown(() => checkNext(u, u.origin, seen, at, a)).detail).toBe(
      'page 1: the next page points back to a page already read',
    );
    expect(() => checkNext(u, u.origin, seen, at, b)).not.toThrow();
  });
});

describe('{{since}}', () => {
  const soql =
    'https://acme.my.salesforce.com/services/data/v60.0/query?q=SELECT+Id,Name+FROM+Account+WHERE+LastModifiedDate>{{since}}';

  it('becomes the start time in UTC to the second, URL-encoded', () => {
    const since = new Date('2024-05-01T10:20:30.456Z');
    expect(sinceText(since)).toBe('2024-05-01T10:20:30Z');
    expect(withSince(soql, since)).toBe(
      'https://acme.my.salesforce.com/services/data/v60.0/query?q=SELECT+Id,Name+FROM+Account+WHERE+LastModifiedDate>2024-05-01T10%3A20%3A30Z',
    );
    expect(withSince('https://a.example/x?from={{since}}&to={{since}}', since)).toBe(
      'https://a.example/x?from=2024-05-01T10%3A20%3A30Z&to=2024-05-01T10%3A20%3A30Z',
    );
  });

  it('without a start time (first run, --full) reads from 1970: the filter stays valid', () => {
    expect(withSince(soql, undefined)).toMatch(/LastModifiedDate>1970-01-01T00%3A00%3A00Z$/);
    expect(
      withSince(
        'https://org.crm.dynamics.com/api/data/v9.2/accounts?$filter=modifiedon gt {{since}}',
        undefined,
      ),
    ).toBe(
      'https://org.crm.dynamics.com/api/data/v9.2/accounts?$filter=modifiedon gt 1970-01-01T00%3A00%3A00Z',
    );
  });

  it('is found as written and percent-encoded; a URL without it is left alone', () => {
    expect(hasSince(soql)).toBe(true);
    expect(hasSince(new URL('https://a.example/changes/{{since}}').href)).toBe(true);
    expect(hasSince('https://a.example/x?since=2024')).toBe(false);
    expect(withSince('https://a.example/x?since=2024', new Date())).toBe(
      'https://a.example/x?since=2024',
    );
  });
});
