/**
 * The sandbox answers every documented operation of the platform API
 * (docs/PLATFORM-API.md) in its documented shapes, with DRF's errors: auth,
 * 404, 405, 400 and pagination.
 * Plain fetch against an in-process sandbox on port 0.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import {
  Account,
  ApiAccount,
  Company,
  CompanyPage,
  Member,
  OnboardeeNotifications,
  OnboarderNotifications,
  Option,
  ProjectAsset,
  ProjectType,
  Role,
  Task,
  TeamTask,
  Variable,
  Workflow,
} from '../../src/platform/schemas.js';
import { startSandbox, type Sandbox } from '@crm-sync/platform-sandbox';

const KEY = 'sandbox-test-key';
let sb: Sandbox;

async function call(
  method: string,
  path: string,
  body?: unknown,
  key: string | null = KEY,
): Promise<{ status: number; body: Record<string, unknown>; headers: Headers }> {
  const headers: Record<string, string> = {};
  if (key !== null) headers.Authorization = key;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(`${sb.url}${path}`, {
    method,
    headers,
    ...(body !== undefined && { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  expect(res.headers.get('content-type')).toBe('application/json');
  const text = await res.text();
  return {
    status: res.status,
    body: (text ? JSON.parse(text) : {}) as Record<string, unknown>,
    headers: res.headers,
  };
}

/** Every documented field is present, and every type is the documented one. */
function expectShape(schema: z.ZodObject, record: unknown): void {
  expect(Object.keys(record as object)).toEqual(expect.arrayContaining(Object.keys(schema.shape)));
  const parsed = schema.safeParse(record);
  expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
}

/** GET list endpoints answer DRF pages; each result has the resource's shape. */
async function expectPageOf(path: string, schema: z.ZodObject): Promise<unknown[]> {
  const r = await call('GET', path);
  expect(r.status).toBe(200);
  expect(Object.keys(r.body).sort()).toEqual(['count', 'next', 'previous', 'results']);
  const results = r.body.results as unknown[];
  for (const rec of results) expectShape(schema, rec);
  return results;
}

beforeAll(async () => {
  sb = await startSandbox({ apiKey: KEY, pageSize: 5 });
});
afterAll(async () => {
  await sb.close();
});

describe('authentication', () => {
  it('answers 401 without a key, with a wrong key and with a "Token " prefix', async () => {
    const none = await call('GET', '/companies', undefined, null);
    expect(none.status).toBe(401);
    expect(none.body).toEqual({ detail: 'Authentication credentials were not provided.' });
    const wrong = await call('GET', '/companies', undefined, 'nope');
    expect(wrong).toMatchObject({ status: 401, body: { detail: 'Invalid token.' } });
    const prefixed = await call('GET', '/companies', undefined, `Token ${KEY}`);
    expect(prefixed).toMatchObject({ status: 401, body: { detail: 'Invalid token.' } });
    expect((await call('GET', '/companies')).status).toBe(200);
  });

  it('accepts the token of a new API account, and only the latest token after regeneration', async () => {
    const made = await call('POST', '/api-accounts', { first_name: 'CI Robot', status: 'active' });
    expect(made.status).toBe(201);
    expectShape(ApiAccount, made.body);
    expect(made.body).toMatchObject({ first_name: 'CI Robot', name: 'CI Robot', status: 'active' });
    const first = made.body.token as string;
    expect(first).toMatch(/^[0-9a-f]{40}$/);
    expect((await call('GET', '/account', undefined, first)).status).toBe(200);

    const again = await call('POST', '/api-accounts', {
      first_name: 'CI Robot',
      regenerate_token: true,
    });
    expect(again.status).toBe(200);
    expect(again.body.id).toBe(made.body.id);
    const second = again.body.token as string;
    expect(second).not.toBe(first);
    expect((await call('GET', '/account', undefined, first)).body).toEqual({
      detail: 'Invalid token.',
    });
    expect((await call('GET', '/account', undefined, second)).status).toBe(200);
    // The configured key is the account's default key, untouched by API accounts.
    expect((await call('GET', '/account')).status).toBe(200);
  });

  it('refuses the token of an inactive API account', async () => {
    const made = await call('POST', '/api-accounts', { first_name: 'Paused', status: 'inactive' });
    expect(made.body.is_active).toBe('false');
    const r = await call('GET', '/account', undefined, made.body.token as string);
    expect(r).toMatchObject({ status: 401, body: { detail: 'User inactive or deleted.' } });
  });
});

describe('companies and customers', () => {
  it('creates, reads and updates a company with server-set fields', async () => {
    const made = await call('POST', '/companies', {
      name: '  Acme Corp ',
      website: 'https://acme.example',
      external_id: 'hs-1',
      crm_account_id: '0015g00000XyZ',
      crm_company_id: 123456789012,
      id: 999,
      created_by: 'forged',
      unknown_field: 'ignored',
    });
    expect(made.status).toBe(200);
    expectShape(Company, made.body);
    expect(made.body).toMatchObject({
      name: 'Acme Corp',
      crm_company_id: 123456789012,
      created_by: 'Sandbox API',
    });
    expect(made.body.id).not.toBe(999);
    expect(made.body).not.toHaveProperty('unknown_field');
    expect(made.body.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const id = made.body.id as number;

    const got = await call('GET', `/companies/${id}`);
    expect(got.body).toEqual(made.body);

    const put = await call('PUT', `/companies/${id}`, { name: 'Acme Inc', crm_company_id: '42' });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({
      id,
      name: 'Acme Inc',
      crm_company_id: 42,
      external_id: 'hs-1',
    });
    expect(put.body.created_at).toBe(made.body.created_at);
  });

  it('serves /customers as an alias of the same store', async () => {
    const made = await call('POST', '/customers', { name: 'Globex' });
    expect(made.status).toBe(200);
    expectShape(Company, made.body);
    expect((await call('GET', `/companies/${made.body.id as number}`)).body.name).toBe('Globex');
  });

  it('does not enforce uniqueness of CRM ids', async () => {
    const a = await call('POST', '/companies', { name: 'Twin', external_id: 'dup' });
    const b = await call('POST', '/companies', { name: 'Twin', external_id: 'dup' });
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.body.id).not.toBe(b.body.id);
  });

  it('answers OPTIONS /companies with DRF metadata', async () => {
    const r = await call('OPTIONS', '/companies');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ name: 'Company List', renders: expect.any(Array) });
    const post = (r.body.actions as Record<string, Record<string, unknown>>).POST!;
    expect(post.name).toMatchObject({ type: 'string', required: true, max_length: 255 });
    expect(post.id).toMatchObject({ type: 'integer', read_only: true });
    expect(Object.keys(post)).toEqual(expect.arrayContaining(Object.keys(Company.shape)));
  });
});

describe('every other documented operation', () => {
  it('members: POST (201) and GET as a page', async () => {
    const made = await call('POST', '/members', {
      first_name: 'Ada',
      last_name: 'Lovelace',
      email: 'ada@example.com',
      role_ids: ['1', 2],
      features: { beta: true },
      meeting_insights: 'true',
    });
    expect(made.status).toBe(201);
    expectShape(Member, made.body);
    expect(made.body).toMatchObject({
      name: 'Ada Lovelace',
      status: 'active',
      role_ids: ['1', '2'],
      meeting_insights: true,
    });
    const results = await expectPageOf('/members', Member);
    expect(results).toContainEqual(made.body);
  });

  it('project assets: POST (201) and GET', async () => {
    const made = await call('POST', '/project-assets', {
      name: 'Brand guide',
      link: 'https://acme.example/brand.pdf',
      include_in_outboard: true,
      order: 2,
    });
    expect(made.status).toBe(201);
    expectShape(ProjectAsset, made.body);
    expect(made.body).toMatchObject({ file_type: 'link', created_by: 'Sandbox API' });
    expect(await expectPageOf('/project-assets', ProjectAsset)).toContainEqual(made.body);
  });

  it('account: GET and PUT', async () => {
    const got = await call('GET', '/account');
    expectShape(Account, got.body);
    expect(got.body.default_api_key).toBe(KEY);
    const put = await call('PUT', '/account', {
      company_name: 'Renamed',
      stalled_status_threshold: 7,
    });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({
      company_name: 'Renamed',
      stalled_status_threshold: 7,
      slug: 'sandbox',
    });
    expect((await call('GET', '/account')).body.company_name).toBe('Renamed');
  });

  it('roles and project types: POST (201) with server-set fields', async () => {
    const role = await call('POST', '/roles', { name: 'Champion', role_type: 'external' });
    expect(role.status).toBe(201);
    expectShape(Role, role.body);
    expect(role.body.order).toBe(3);
    const pt = await call('POST', '/project-types', { type: 'Enterprise', is_default: true });
    expect(pt.status).toBe(201);
    expectShape(ProjectType, pt.body);
  });

  it('seeded read-only lists carry every field of their tables', async () => {
    expect((await expectPageOf('/tasks', Task)).length).toBeGreaterThan(0);
    expect((await expectPageOf('/team-tasks', TeamTask)).length).toBeGreaterThan(0);
    expect((await expectPageOf('/workflows', Workflow)).length).toBeGreaterThan(0);
    expect((await expectPageOf('/variables', Variable)).length).toBeGreaterThan(0);
    expect((await expectPageOf('/options', Option)).length).toBeGreaterThan(0);
  });

  it('notification preferences: GET and PUT for both sets', async () => {
    for (const [path, schema, field] of [
      ['/onboardee-user/notifications', OnboardeeNotifications, 'task_summary_onboardee'],
      ['/onboarder-user/notifications', OnboarderNotifications, 'task_summary'],
    ] as const) {
      expectShape(schema, (await call('GET', path)).body);
      const put = await call('PUT', path, { [field]: false, task_overdue: 'no' });
      expect(put.status).toBe(200);
      expect(put.body).toMatchObject({ [field]: false, task_overdue: false });
      expect((await call('GET', path)).body[field]).toBe(false);
    }
  });

  it('empty-object endpoints, the root, templates and the comment stream token', async () => {
    for (const path of [
      '/sso',
      '/terms-acceptance',
      '/templates',
      '/defaults',
      '/billing',
      '/getting-started-templates',
      '/getting-started-templates/7',
    ]) {
      const r = await call('GET', path);
      expect([path, r.status, r.body]).toEqual([path, 200, {}]);
    }
    expect(await call('PATCH', '/sso', { enabled: true })).toMatchObject({ status: 200, body: {} });
    const root = await call('GET', '/');
    expect(root.body.companies).toBe(`${sb.url}/companies`);
    expect((await call('OPTIONS', '/')).body).toMatchObject({ name: 'Api Root' });
    expect((await call('OPTIONS', '/getting-started-templates/3')).status).toBe(200);
    const auth = await call('GET', '/comments/auth');
    expect(auth.body.stream_token).toEqual(expect.any(String));
  });
});

describe('DRF errors', () => {
  it('404 for unknown ids and unknown routes, 405 for unsupported methods', async () => {
    expect(await call('GET', '/companies/999999')).toMatchObject({
      status: 404,
      body: { detail: 'Not found.' },
    });
    expect(await call('GET', '/companies/abc')).toMatchObject({
      status: 404,
      body: { detail: 'Not found.' },
    });
    expect(await call('GET', '/no-such-thing')).toMatchObject({
      status: 404,
      body: { detail: 'Not found.' },
    });
    expect(await call('PUT', '/companies/999999', { name: 'x' })).toMatchObject({ status: 404 });
    const put = await call('PUT', '/members/1', { email: 'a@b.co' });
    expect(put).toMatchObject({ status: 405, body: { detail: 'Method "PUT" not allowed.' } });
    expect(put.headers.get('allow')).toBe('OPTIONS');
    expect(await call('DELETE', '/companies/1')).toMatchObject({
      status: 405,
      body: { detail: 'Method "DELETE" not allowed.' },
    });
    expect((await call('GET', '/roles')).status).toBe(405);
  });

  it('400 with DRF field messages, all at once', async () => {
    const r = await call('POST', '/companies', {
      crm_company_id: '12.5',
      website: true,
      external_id: 'x'.repeat(256),
      icon_delete: 'maybe',
    });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({
      name: ['This field is required.'],
      crm_company_id: ['A valid integer is required.'],
      website: ['Not a valid string.'],
      external_id: ['Ensure this field has no more than 255 characters.'],
      icon_delete: ['Must be a valid boolean.'],
    });
    const m = await call('POST', '/members', { email: 'not-an-email', role_ids: 'x' });
    expect(m.body).toEqual({
      email: ['Enter a valid email address.'],
      role_ids: ['Expected a list of items but got type "str".'],
    });
    expect((await call('POST', '/members', {})).body).toEqual({
      email: ['This field is required.'],
    });
    expect((await call('POST', '/companies', { name: null })).body).toEqual({
      name: ['This field may not be null.'],
    });
    expect((await call('POST', '/companies', { name: '   ' })).body).toEqual({
      name: ['This field may not be blank.'],
    });
    expect((await call('POST', '/companies', [1])).body).toEqual({
      non_field_errors: ['Invalid data. Expected a dictionary, but got list.'],
    });
    // PUT validates in full, as DRF does without partial=True.
    expect((await call('PUT', '/companies/1', { website: 'x' })).body).toEqual({
      name: ['This field is required.'],
    });
  });

  it('400 for malformed JSON and 415 for a non-JSON body', async () => {
    const r = await call('POST', '/companies', '{"name": ');
    expect(r.status).toBe(400);
    expect(r.body.detail).toMatch(/^JSON parse error - /);
    const res = await fetch(`${sb.url}/companies`, {
      method: 'POST',
      headers: { Authorization: KEY, 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'name=x',
    });
    expect(res.status).toBe(415);
    expect(await res.json()).toEqual({
      detail: 'Unsupported media type "application/x-www-form-urlencoded" in request.',
    });
  });
});

describe('HTTP details', () => {
  it('serves HEAD where GET is served, accepts a trailing slash and refuses huge bodies', async () => {
    const head = await fetch(`${sb.url}/account`, {
      method: 'HEAD',
      headers: { Authorization: KEY },
    });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
    expect((await call('GET', '/companies/')).status).toBe(200);
    const big = await call(
      'POST',
      '/companies',
      JSON.stringify({ name: 'x'.repeat(11 * 1024 * 1024) }),
    );
    expect(big).toMatchObject({ status: 413, body: { detail: 'Request body too large.' } });
  });
});

describe('pagination', () => {
  it('follows next across at least 3 pages, with absolute links and 404 past the end', async () => {
    const own = await startSandbox({ apiKey: KEY, pageSize: 4 });
    try {
      const headers = { Authorization: KEY, 'Content-Type': 'application/json' };
      for (let i = 0; i < 11; i++) {
        await fetch(`${own.url}/companies`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ name: `P${i}` }),
        });
      }
      const names: string[] = [];
      const pages: z.infer<typeof CompanyPage>[] = [];
      let next: string | null = `${own.url}/companies`;
      while (next) {
        const res = await fetch(next, { headers });
        expect(res.status).toBe(200);
        const page = CompanyPage.parse(await res.json());
        pages.push(page);
        names.push(...page.results.map((c) => c.name ?? ''));
        next = page.next;
      }
      expect(pages.length).toBe(3);
      expect(names).toEqual(Array.from({ length: 11 }, (_, i) => `P${i}`));
      expect(pages.map((p) => p.count)).toEqual([11, 11, 11]);
      expect(pages[0]!.next).toBe(`${own.url}/companies?page=2`);
      expect(pages[1]!.previous).toBe(`${own.url}/companies`);
      expect(pages[2]!.previous).toBe(`${own.url}/companies?page=2`);
      expect(pages[0]!.previous).toBeNull();

      const sized = (await (
        await fetch(`${own.url}/companies?page_size=5&page=2`, { headers })
      ).json()) as {
        next: string;
        results: unknown[];
      };
      expect(sized.results.length).toBe(5);
      expect(sized.next).toBe(`${own.url}/companies?page=3&page_size=5`);

      const beyond = await fetch(`${own.url}/companies?page=4`, { headers });
      expect(beyond.status).toBe(404);
      expect(await beyond.json()).toEqual({ detail: 'Invalid page.' });
      expect((await fetch(`${own.url}/companies?page=zero`, { headers })).status).toBe(404);
      const last = (await (await fetch(`${own.url}/companies?page=last`, { headers })).json()) as {
        results: unknown[];
      };
      expect(last.results.length).toBe(3);
    } finally {
      await own.close();
    }
  });

  it('members-put extension: PUT /members/{id} updates the member', async () => {
    const own = await startSandbox({ apiKey: KEY, extensions: ['members-put'] });
    try {
      const headers = { Authorization: KEY, 'Content-Type': 'application/json' };
      const made = (await (
        await fetch(`${own.url}/members`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ email: 'a@example.com', first_name: 'A' }),
        })
      ).json()) as { id: number };
      const res = await fetch(`${own.url}/members/${made.id}`, {
        method: 'PUT',
        headers,
        body: JSON.stringify({ email: 'a@example.com', last_name: 'B' }),
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ id: made.id, name: 'A B', last_name: 'B' });
      const missing = await fetch(`${own.url}/members/999`, {
        method: 'PUT',
        headers,
        body: '{"email":"x@y.co"}',
      });
      expect(missing.status).toBe(404);
    } finally {
      await own.close();
    }
  });
});
