/**
 * `paginate`, `retry` and `{{since}}` in job files: what loads, and every
 * problem reported with its path, as `crm-sync validate` shows them.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { JobError, loadJob } from '../../src/jobs/definition.js';

const root = mkdtempSync(join(tmpdir(), 'crm-sync-paginate-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let n = 0;
function job(source: string): string {
  const dir = join(root, `case-${n++}`);
  mkdirSync(dir, { recursive: true });
  const text = ['entity: companies', `source: ${source}`, 'mapping: salesforce-accounts'];
  writeFileSync(join(dir, 'pull.yaml'), text.join('\n'));
  return dir;
}

function problemsOf(dir: string): string[] {
  try {
    loadJob(dir, 'pull');
  } catch (err) {
    expect(err).toBeInstanceOf(JobError);
    return (err as JobError).problems.map((p) => p.slice(p.indexOf(': ') + 2));
  }
  throw new Error('no error');
}

describe('job files: paginated sources', () => {
  it('load a preset, written-out rules, retry settings and a URL with {{since}}', () => {
    const soql =
      'https://acme.my.salesforce.com/services/data/v60.0/query?q=SELECT+Id,Name+FROM+Account+WHERE+LastModifiedDate>{{since}}';
    const dir = job(
      `{ url: "${soql}", paginate: salesforce, headers: { Authorization: "Bearer \${SF_TOKEN}" }, retry: { attempts: 3, maxDelayMs: 10000 } }`,
    );
    expect(loadJob(dir, 'pull').source).toEqual({
      url: soql,
      paginate: 'salesforce',
      headers: { Authorization: 'Bearer ${SF_TOKEN}' },
      retry: { attempts: 3, maxDelayMs: 10000 },
    });
    const rules = job(
      '{ url: "https://org.crm.dynamics.com/api/data/v9.2/accounts", paginate: { next: "@odata.nextLink" }, recordsPath: value }',
    );
    expect(loadJob(rules, 'pull').source.paginate).toEqual({ next: '@odata.nextLink' });
  });

  it('load a POST search with its body, and a page count', () => {
    const dir = job(
      [
        '',
        '  url: https://api.copper.com/developer_api/v1/companies/search',
        '  headers: { X-PW-AccessToken: "${COPPER_TOKEN}", X-PW-UserEmail: ops@example.com }',
        '  paginate:',
        '    method: POST',
        '    body: { page_size: 100, sort_by: name, minimum_modified_date: 0 }',
        '    pageParam: page_number',
        '    untilEmpty: true',
      ].join('\n'),
    );
    expect(loadJob(dir, 'pull').source.paginate).toEqual({
      method: 'POST',
      body: { page_size: 100, sort_by: 'name', minimum_modified_date: 0 },
      pageParam: 'page_number',
      untilEmpty: true,
    });
    const fs = job(
      '{ url: "https://acme.myfreshworks.com/crm/sales/api/sales_accounts/view/1", paginate: freshsales, recordsPath: sales_accounts }',
    );
    expect(loadJob(fs, 'pull').source.paginate).toBe('freshsales');
    expect(
      problemsOf(
        job(
          '{ url: "https://a.example/x", paginate: { body: { size: 1 }, pageParam: page, totalPages: meta.total_pages } }',
        ),
      ),
    ).toEqual(['source.paginate.body: body goes with method: POST (a GET sends no body)']);
  });

  it('report each problem with its path', () => {
    expect(problemsOf(job('{ url: "https://a.example/x", paginate: hubspt }'))).toEqual([
      'source.paginate: a preset (hubspot, salesforce, pipedrive, close, dataverse, freshsales, copper) or an object with next, cursor, hasMore, totalPages or untilEmpty',
    ]);
    expect(
      problemsOf(job('{ url: "https://a.example/x", paginate: { cursor: paging.next.after } }')),
    ).toEqual([
      'source.paginate: cursor and param go together: param names the query parameter the cursor is sent in',
    ]);
    expect(
      problemsOf(
        job('{ url: "https://a.example/x", paginate: { hasMore: has_more, pageSize: 2 } }'),
      ),
    ).toEqual([
      'source.paginate: Unrecognized key: "pageSize"',
      'source.paginate: hasMore needs exactly one of offsetParam or pageParam',
    ]);
    expect(
      problemsOf(
        job('{ path: ./accounts.json, format: csv, paginate: close, retry: { attempts: 0 } }'),
      ),
    ).toEqual([
      'source.retry.attempts: Too small: expected number to be >=1',
      'source.paginate: paginate needs a url',
      'source.format: a paginated source reads JSON pages: leave format out or set json',
    ]);
    expect(problemsOf(job('{ url: "https://a.example/x", retry: { attempts: 2 } }'))).toEqual([
      'source.retry: retry applies to paginated sources (each page is tried again on its own)',
    ]);
  });
});
