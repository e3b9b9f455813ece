/**
 * The fault knobs (rate limit, latency, 503s, drop after commit), changed at
 * run time with setFaults, and the /__sandbox/stats, /__sandbox/requests and
 * /__sandbox/dump routes.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  SandboxOptionsError,
  startSandbox,
  type Sandbox,
  type SandboxOptions,
} from '@crm-sync/platform-sandbox';

const KEY = 'fault-test-key';
const headers = { Authorization: KEY, 'Content-Type': 'application/json' };
const open: Sandbox[] = [];

async function sandbox(opts: Partial<SandboxOptions> = {}): Promise<Sandbox> {
  const sb = await startSandbox({ apiKey: KEY, ...opts });
  open.push(sb);
  return sb;
}

afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

async function dump(sb: Sandbox): Promise<Record<string, unknown[]>> {
  return (await (await fetch(`${sb.url}/__sandbox/dump`)).json()) as Record<string, unknown[]>;
}

const postCompany = (sb: Sandbox, name: string) =>
  fetch(`${sb.url}/companies`, { method: 'POST', headers, body: JSON.stringify({ name }) });

describe('rate limit', () => {
  it('answers a burst beyond the bucket with 429 and an integer Retry-After', async () => {
    // 2 rps: the bucket refills far slower than 20 requests arrive, even on a loaded machine.
    const sb = await sandbox({ rateLimit: 2 });
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => fetch(`${sb.url}/account`, { headers })),
    );
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(2);
    expect(statuses.filter((s) => s === 200).length).toBeLessThan(10);
    const limited = responses.filter((r) => r.status === 429);
    expect(limited.length).toBeGreaterThan(0);
    for (const r of limited) {
      const after = r.headers.get('retry-after');
      expect(after).toMatch(/^\d+$/);
      expect(Number(after)).toBeGreaterThanOrEqual(1);
      expect(await r.json()).toEqual({
        detail: `Request was throttled. Expected available in ${after} second${after === '1' ? '' : 's'}.`,
      });
    }
    sb.setFaults({ rateLimit: undefined });
    expect((await fetch(`${sb.url}/account`, { headers })).status).toBe(200);
  });

  it('counts unauthenticated requests too', async () => {
    // One token, refilled every 10 s: the 401 took it.
    const sb = await sandbox({ rateLimit: 0.1 });
    const statuses: number[] = [];
    for (let i = 0; i < 2; i++) statuses.push((await fetch(`${sb.url}/companies`)).status);
    expect(statuses).toEqual([401, 429]);
  });

  it('can be switched on at run time (a burst of 429s)', async () => {
    const sb = await sandbox();
    expect((await fetch(`${sb.url}/account`, { headers })).status).toBe(200);
    sb.setFaults({ rateLimit: 0.2 });
    const statuses = [];
    for (let i = 0; i < 3; i++)
      statuses.push((await fetch(`${sb.url}/account`, { headers })).status);
    expect(statuses).toEqual([200, 429, 429]);
    const r = await fetch(`${sb.url}/account`, { headers });
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(4);
  });
});

describe('rate limit: DRF sliding log', () => {
  it('reads N/m, keys the limit by API key, and says when the oldest request leaves', async () => {
    const sb = await sandbox({ rateLimit: '2/m' });
    const get = (key: string) => fetch(`${sb.url}/account`, { headers: { Authorization: key } });
    expect((await get(KEY)).status).toBe(200);
    expect((await get(KEY)).status).toBe(200);
    const limited = await get(KEY);
    expect(limited.status).toBe(429);
    // The oldest request leaves the window in a minute less the time since, rounded up.
    expect(['59', '60']).toContain(limited.headers.get('retry-after'));
    // Another key has its own log (its 401 still counts against it).
    expect((await get('another-key')).status).toBe(401);
    expect((await get('another-key')).status).toBe(401);
    expect((await get('another-key')).status).toBe(429);
  });

  it('keeps the token bucket and the fixed window selectable', async () => {
    const sb = await sandbox({ rateLimit: '1/m', rateLimitMode: 'fixed' });
    const statuses = [];
    for (let i = 0; i < 2; i++)
      statuses.push((await fetch(`${sb.url}/account`, { headers })).status);
    expect(statuses).toEqual([200, 429]);
    sb.setFaults({ rateLimitMode: 'bucket' });
    expect((await fetch(`${sb.url}/account`, { headers })).status).toBe(200);
  });

  it('refuses a rate it cannot read, by name', async () => {
    await expect(startSandbox({ apiKey: KEY, rateLimit: '10/fortnight' })).rejects.toThrow(
      SandboxOptionsError,
    );
    await expect(startSandbox({ apiKey: KEY, rateLimit: '10/x' })).rejects.toThrow(/rateLimit/);
  });
});

describe('latency', () => {
  it('delays answers by about latencyMs, and can be changed at run time', async () => {
    const sb = await sandbox({ latencyMs: 150 });
    let t = performance.now();
    expect((await fetch(`${sb.url}/account`, { headers })).status).toBe(200);
    expect(performance.now() - t).toBeGreaterThanOrEqual(140);
    sb.setFaults({ latencyMs: 0 });
    // Loose: only shows the delay is gone, not how fast the machine is.
    t = performance.now();
    await fetch(`${sb.url}/account`, { headers });
    expect(performance.now() - t).toBeLessThan(140);
  });
});

describe('fault rate', () => {
  it('answers 503 before any effect', async () => {
    const sb = await sandbox({ faultRate: 1 });
    const r = await postCompany(sb, 'Never stored');
    expect(r.status).toBe(503);
    expect(await r.json()).toEqual({ detail: 'Service temporarily unavailable, try again later.' });
    expect((await dump(sb)).companies).toEqual([]);
  });

  it('is reproducible with a seed and leaves no trace of failed writes', async () => {
    const run = async (): Promise<number[]> => {
      const sb = await sandbox({ faultRate: 0.5, seed: 42 });
      const statuses: number[] = [];
      for (let i = 0; i < 30; i++) statuses.push((await postCompany(sb, `C${i}`)).status);
      expect((await dump(sb)).companies?.length).toBe(statuses.filter((s) => s === 200).length);
      return statuses;
    };
    const first = await run();
    expect(first).toContain(503);
    expect(first).toContain(200);
    expect(await run()).toEqual(first);
  });
});

describe('drop after commit', () => {
  it('stores the write, then cuts the connection before any response', async () => {
    const sb = await sandbox({ dropAfterCommit: 1 });
    await expect(postCompany(sb, 'Applied but unanswered')).rejects.toThrow();
    const companies = (await dump(sb)).companies as { name: string }[];
    expect(companies.map((c) => c.name)).toEqual(['Applied but unanswered']);
    // Reads are never dropped.
    expect((await fetch(`${sb.url}/companies/1`, { headers })).status).toBe(200);
    const stats = (await (await fetch(`${sb.url}/__sandbox/stats`)).json()) as {
      requests: { method: string; route: string; status: number; count: number }[];
    };
    expect(stats.requests).toContainEqual({
      method: 'POST',
      route: '/companies',
      status: 0,
      count: 1,
    });
  });

  it('drops none of the failed writes', async () => {
    const sb = await sandbox({ dropAfterCommit: 1 });
    const r = await fetch(`${sb.url}/companies`, { method: 'POST', headers, body: '{}' });
    expect(r.status).toBe(400);
  });
});

describe('/__sandbox routes', () => {
  it('stats counts every platform request by method, route template and status, not itself', async () => {
    const sb = await sandbox();
    await postCompany(sb, 'A');
    await postCompany(sb, 'B');
    await fetch(`${sb.url}/companies/1`, { method: 'PUT', headers, body: '{"name":"A2"}' });
    await fetch(`${sb.url}/companies/2`, { headers });
    await fetch(`${sb.url}/companies/9`, { headers });
    await fetch(`${sb.url}/companies`);
    await fetch(`${sb.url}/__sandbox/dump`);
    const res = await fetch(`${sb.url}/__sandbox/stats`);
    expect(res.headers.get('content-type')).toBe('application/json');
    const body = (await res.json()) as { requests: unknown[] };
    expect(Object.keys(body)).toEqual(['requests']);
    expect(body.requests).toEqual(
      expect.arrayContaining([
        { method: 'POST', route: '/companies', status: 200, count: 2 },
        { method: 'PUT', route: '/companies/{id}', status: 200, count: 1 },
        { method: 'GET', route: '/companies/{id}', status: 200, count: 1 },
        { method: 'GET', route: '/companies/{id}', status: 404, count: 1 },
        { method: 'GET', route: '/companies', status: 401, count: 1 },
      ]),
    );
    expect(body.requests.length).toBe(5);
  });

  it('requests lists each platform request in order, when it arrived, with a 429s Retry-After', async () => {
    const sb = await sandbox({ rateLimit: 1 });
    const before = Date.now();
    await postCompany(sb, 'A');
    await fetch(`${sb.url}/companies/1`, { headers });
    await fetch(`${sb.url}/__sandbox/stats`);
    const after = Date.now();
    const body = (await (await fetch(`${sb.url}/__sandbox/requests`)).json()) as {
      requests: { at: number }[];
    };
    expect(body.requests).toEqual([
      { at: expect.any(Number), method: 'POST', route: '/companies', status: 200 },
      {
        at: expect.any(Number),
        method: 'GET',
        route: '/companies/{id}',
        status: 429,
        retryAfter: 1,
      },
    ]);
    const [first, second] = body.requests.map((r) => r.at) as [number, number];
    expect(before).toBeLessThanOrEqual(first);
    expect(first).toBeLessThanOrEqual(second);
    expect(second).toBeLessThanOrEqual(after);
  });

  it('dump lists every stored record as the API returns it, keyed by resource', async () => {
    const sb = await sandbox();
    const made = await (await postCompany(sb, 'Dumped')).json();
    const d = await dump(sb);
    expect(d.companies).toEqual([made]);
    expect(d.members).toEqual([]);
    for (const key of [
      'api-accounts',
      'roles',
      'project-types',
      'project-assets',
      'tasks',
      'team-tasks',
      'workflows',
      'variables',
      'options',
    ]) {
      expect(Array.isArray(d[key]), key).toBe(true);
    }
    expect(d.account).toMatchObject({ id: 1 });
  });
});

describe('options', () => {
  it('refuses bad values, naming each one', async () => {
    await expect(startSandbox({ apiKey: '', faultRate: 2 })).rejects.toThrow(SandboxOptionsError);
    await expect(startSandbox({ apiKey: 'k', faultRate: 2, dropAfterCommit: -1 })).rejects.toThrow(
      /faultRate.*dropAfterCommit/,
    );
    const sb = await sandbox();
    expect(() => sb.setFaults({ faultRate: 1.5 })).toThrow(SandboxOptionsError);
  });
});
