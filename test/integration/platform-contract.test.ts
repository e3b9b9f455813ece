/**
 * Contract: PlatformClient against the real sandbox (packages/platform-sandbox),
 * one call per documented operation of the platform API (docs/PLATFORM-API.md),
 * then the sandbox's own stats prove every operation was served with success. Auth, 404, 400 and
 * pagination cases follow.
 */
import { inspect } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PlatformClient } from '../../src/platform/client.js';
import { errorFromResponse } from '../../src/platform/error-factory.js';
import {
  BadRequestError,
  ClientError,
  CrossOriginError,
  NotFoundError,
  PlatformError,
  UnauthorizedError,
} from '../../src/platform/errors.js';
import { startSandbox, type Sandbox } from '@crm-sync/platform-sandbox';

const KEY = 'sbx_contract_key_5f1c2d3e';

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

async function failure(p: Promise<unknown>): Promise<PlatformError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(PlatformError);
    return err as PlatformError;
  }
  throw new Error('expected a failure');
}

interface StatsEntry {
  method: string;
  route: string;
  status: number;
  count: number;
}

describe('PlatformClient against the sandbox', () => {
  let sandbox: Sandbox;
  let client: PlatformClient;
  const clients: PlatformClient[] = [];
  const open = (apiKey: string, url = sandbox.url) => {
    const c = new PlatformClient({ baseUrl: url, apiKey, timeoutMs: 5_000 });
    clients.push(c);
    return c;
  };

  beforeAll(async () => {
    sandbox = await startSandbox({
      apiKey: KEY,
      port: 0,
      pageSize: 4,
      extensions: ['members-put'],
    });
    client = open(KEY);
  });
  afterAll(async () => {
    for (const c of clients) c.close();
    await sandbox.close();
  });

  it('serves every documented operation with the shapes the client expects', async () => {
    const c = client;
    expect(await c.root()).toBeTypeOf('object');
    expect(await c.rootOptions()).toBeTypeOf('object');
    await collect(c.gettingStartedTemplates());
    await c.gettingStartedTemplatesOptions();
    await c.gettingStartedTemplate('1');
    await c.gettingStartedTemplateOptions('1');

    const created = await c.createCompany({
      name: 'Acme',
      website: 'https://acme.example',
      external_id: 'hs-1',
      crm_account_id: 'acc-1',
      crm_company_id: 987654321098,
    });
    expect(created.id).toBeTypeOf('number');
    expect(created.crm_company_id).toBe(987654321098);
    expect(created.created_at).toBeTypeOf('string');
    const page = await c.companiesPage();
    expect(page.results.some((r) => r.id === created.id)).toBe(true);
    expect(await c.companiesOptions()).toHaveProperty('actions');
    expect((await c.getCompany(created.id!)).name).toBe('Acme');
    const updated = await c.updateCompany(created.id!, {
      name: 'Acme Ltd',
      crm_company_id: 987654321099,
    });
    expect(updated.name).toBe('Acme Ltd');
    expect(updated.crm_company_id).toBe(987654321099);
    const customer = await c.createCustomer({ name: 'Customer Co' });
    expect(customer.name).toBe('Customer Co');

    expect((await c.commentsAuth()).stream_token).toBeTypeOf('string');
    const member = await c.createMember({
      email: 'ada@example.com',
      first_name: 'Ada',
      external_id: 'u-1',
    });
    expect(member.email).toBe('ada@example.com');
    expect((await collect(c.members())).map((m) => m.id)).toContain(member.id);
    expect(
      (await c.updateMember(member.id!, { email: 'ada@example.com', first_name: 'Augusta' }))
        .first_name,
    ).toBe('Augusta');
    const asset = await c.createProjectAsset({
      name: 'Kickoff deck',
      link: 'https://example.com/deck',
    });
    expect((await collect(c.projectAssets())).map((a) => a.id)).toContain(asset.id);
    const account = await c.getAccount();
    expect(account.id).toBeTypeOf('number');
    expect((await c.updateAccount({ company_name: 'Tenant' })).company_name).toBe('Tenant');
    await collect(c.teamTasks());
    await collect(c.tasks());
    await collect(c.workflows());
    expect(
      (await c.createRole({ name: 'CSM', description: 'Success', role_type: 'internal' })).name,
    ).toBe('CSM');
    await collect(c.variables());
    await collect(c.options());
    expect((await c.createProjectType({ type: 'Enterprise', is_default: false })).type).toBe(
      'Enterprise',
    );
    const apiAccount = await c.createApiAccount({ first_name: 'contract', status: 'active' });
    expect(apiAccount.token).toBeTypeOf('string');
    await c.getSso();
    await c.updateSso({});
    await c.termsAcceptance();
    await c.templates();
    await c.defaults();
    await c.billing();
    await c.onboardeeNotifications();
    expect((await c.updateOnboardeeNotifications({ task_overdue: false })).task_overdue).toBe(
      false,
    );
    await c.onboarderNotifications();
    expect((await c.updateOnboarderNotifications({ task_summary: true })).task_summary).toBe(true);

    const stats = (await (await fetch(`${sandbox.url}/__sandbox/stats`)).json()) as {
      requests: StatsEntry[];
    };
    const served = new Set(
      stats.requests.filter((r) => r.status < 300).map((r) => `${r.method} ${r.route}`),
    );
    // Every documented operation, plus PUT /members/{id} (the members-put extension).
    const contract = [
      'GET /',
      'OPTIONS /',
      'GET /getting-started-templates',
      'OPTIONS /getting-started-templates',
      'GET /getting-started-templates/{id}',
      'OPTIONS /getting-started-templates/{id}',
      'GET /companies',
      'POST /companies',
      'OPTIONS /companies',
      'GET /companies/{id}',
      'PUT /companies/{id}',
      'POST /customers',
      'GET /comments/auth',
      'POST /members',
      'GET /members',
      'PUT /members/{id}',
      'POST /project-assets',
      'GET /project-assets',
      'GET /account',
      'PUT /account',
      'GET /team-tasks',
      'GET /tasks',
      'GET /workflows',
      'POST /roles',
      'GET /variables',
      'GET /options',
      'POST /project-types',
      'POST /api-accounts',
      'GET /sso',
      'PATCH /sso',
      'GET /terms-acceptance',
      'GET /templates',
      'GET /defaults',
      'GET /billing',
      'GET /onboardee-user/notifications',
      'PUT /onboardee-user/notifications',
      'GET /onboarder-user/notifications',
      'PUT /onboarder-user/notifications',
    ];
    expect(contract.filter((op) => !served.has(op))).toEqual([]);
  });

  describe('authentication', () => {
    it('a wrong key is a 401 UnauthorizedError, not retryable, without the key', async () => {
      const wrong = 'sbx_wrong_key_0000';
      const err = await failure(open(wrong).getAccount());
      expect(err).toBeInstanceOf(UnauthorizedError);
      expect(err.code).toBe('platform.unauthorized');
      expect(err.statusCode).toBe(401);
      expect(err.retryable).toBe(false);
      expect(inspect(err, { depth: 10 })).not.toContain(wrong);
      expect(JSON.stringify(err)).not.toContain(wrong);
    });

    it('a "Token " prefix is refused: the key goes alone in Authorization', async () => {
      const err = await failure(open(`Token ${KEY}`).listCompanies());
      expect(err).toBeInstanceOf(UnauthorizedError);
      expect(inspect(err, { depth: 10 })).not.toContain(KEY);
    });

    it('no key: the client refuses to start, and the sandbox answers 401 that maps to UnauthorizedError', async () => {
      expect(() => new PlatformClient({ baseUrl: sandbox.url, apiKey: '' })).toThrow(/apiKey/);
      const res = await fetch(`${sandbox.url}/companies`, {
        headers: { accept: 'application/json' },
      });
      expect(res.status).toBe(401);
      const err = errorFromResponse({
        method: 'GET',
        route: '/companies',
        status: res.status,
        headers: Object.fromEntries(res.headers),
        body: await res.text(),
      });
      expect(err).toBeInstanceOf(UnauthorizedError);
      expect(err.detail).toBeTruthy();
    });

    it('a token issued by POST /api-accounts works as a key; regenerating it retires the old one', async () => {
      const first = await client.createApiAccount({ first_name: 'issuer', status: 'active' });
      const token = first.token!;
      expect(token).toBeTruthy();
      const withToken = open(token);
      expect((await withToken.getAccount()).id).toBeTypeOf('number');
      const again = await client.createApiAccount({ first_name: 'issuer', regenerate_token: true });
      expect(again.token).toBeTruthy();
      expect(again.token).not.toBe(token);
      expect(await failure(withToken.getAccount())).toBeInstanceOf(UnauthorizedError);
      expect((await open(again.token!).getAccount()).id).toBeTypeOf('number');
    });
  });

  it('a missing record is a NotFoundError', async () => {
    const err = await failure(client.getCompany(987_654_321));
    expect(err).toBeInstanceOf(NotFoundError);
    expect(err.code).toBe('platform.not-found');
    expect(err.route).toBe('/companies/{id}');
    expect(err.path).toBe('/companies/987654321');
    expect(err.retryable).toBe(false);
    expect(await failure(client.updateCompany(987_654_321, { name: 'x' }))).toBeInstanceOf(
      NotFoundError,
    );
  });

  it('a refused body is a BadRequestError with the field messages', async () => {
    const missing = (await failure(
      client.createCompany({ website: 'https://x.example' }),
    )) as BadRequestError;
    expect(missing).toBeInstanceOf(BadRequestError);
    expect(missing.fields.name).toEqual(['This field is required.']);
    expect(missing.mayHaveApplied).toBe(false);
    const long = (await failure(
      client.createCompany({ name: 'x'.repeat(300) }),
    )) as BadRequestError;
    expect(long.fields.name?.[0]).toMatch(/255/);
    expect(long.message).toContain('name:');
  });

  it('PUT /members/{id} without the extension is a 405 ClientError', async () => {
    const plain = await startSandbox({ apiKey: KEY, port: 0 });
    try {
      const c = open(KEY, plain.url);
      const m = await c.createMember({ email: 'grace@example.com' });
      const err = await failure(
        c.updateMember(m.id!, { email: 'grace@example.com', first_name: 'Grace' }),
      );
      expect(err).toBeInstanceOf(ClientError);
      expect(err.statusCode).toBe(405);
    } finally {
      await plain.close();
    }
  });

  it('lists every company across at least 3 pages, in order, each exactly once', async () => {
    const own = await startSandbox({ apiKey: KEY, port: 0, pageSize: 3 });
    try {
      const c = open(KEY, own.url);
      const ids: number[] = [];
      for (let i = 0; i < 10; i++)
        ids.push(
          (await c.createCompany({ name: `Co ${i}`, crm_company_id: 100000000000 + i })).id!,
        );
      const pages = await collect(c.companyPages());
      expect(pages.length).toBe(4);
      expect(pages[0]!.count).toBe(10);
      expect(pages.at(-1)!.next).toBeNull();
      const all = await c.listCompanies();
      expect(all.map((x) => x.id)).toEqual(ids);
      expect(all.map((x) => x.crm_company_id)).toEqual(ids.map((_, i) => 100000000000 + i));
      // A next link rewritten to another origin is refused.
      const foreign = pages[0]!.next!.replace('127.0.0.1', 'localhost');
      expect(await failure(c.companiesPage(foreign))).toBeInstanceOf(CrossOriginError);
      // The page link itself is followed as given.
      expect((await c.companiesPage(pages[0]!.next!)).results.map((x) => x.id)).toEqual(
        ids.slice(3, 6),
      );
      // Members, a generic listing, follow the same pages.
      for (let i = 0; i < 7; i++) await c.createMember({ email: `m${i}@example.com` });
      expect((await collect(c.members())).length).toBe(7);
    } finally {
      await own.close();
    }
  });
});
