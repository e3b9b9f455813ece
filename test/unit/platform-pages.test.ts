import { describe, expect, it } from 'vitest';
import { CrossOriginError, InvalidResponseError } from '../../src/platform/errors.js';
import { classifyListing, paginate, resolveNext } from '../../src/platform/pages.js';

const origin = 'http://127.0.0.1:8000';
const ctx = { method: 'GET', route: '/companies' };

describe('classifyListing', () => {
  it('tells a page, an array and a single record apart', () => {
    expect(classifyListing({ count: 2, next: null, previous: null, results: [1, 2] })).toEqual({
      kind: 'page',
      items: [1, 2],
      next: null,
      count: 2,
    });
    expect(classifyListing([{ id: 1 }])).toEqual({ kind: 'array', items: [{ id: 1 }] });
    expect(classifyListing({ id: 1, results: 'x' })).toEqual({
      kind: 'single',
      items: [{ id: 1, results: 'x' }],
    });
    expect(classifyListing({})).toEqual({ kind: 'single', items: [] });
  });
  it('names what is wrong with a bad envelope or a scalar', () => {
    const bad = classifyListing({ count: 'many', next: null, results: [] });
    expect(bad.kind).toBe('invalid');
    expect(bad.kind === 'invalid' && bad.issues[0]).toMatch(/^count: /);
    expect(classifyListing(42).kind).toBe('invalid');
    expect(classifyListing(null).kind).toBe('invalid');
  });
});

describe('resolveNext', () => {
  const current = new URL(`${origin}/api/companies`);
  it('follows absolute and relative links on the same origin', () => {
    expect(resolveNext(`${origin}/api/companies?page=2`, current, origin, ctx).href).toBe(
      `${origin}/api/companies?page=2`,
    );
    expect(resolveNext('?page=3', current, origin, ctx).href).toBe(
      `${origin}/api/companies?page=3`,
    );
    expect(resolveNext('/api/companies?page=4', current, origin, ctx).href).toBe(
      `${origin}/api/companies?page=4`,
    );
  });
  it.each([
    'http://evil.example/api/companies?page=2',
    'https://127.0.0.1:8000/api/companies?page=2',
    'http://127.0.0.1:8001/api/companies?page=2',
    'http://user:pw@127.0.0.1:8000/api/companies?page=2',
    '//evil.example/x',
  ])('refuses %s', (next) => {
    let err: unknown;
    try {
      resolveNext(next, current, origin, ctx);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CrossOriginError);
    expect((err as CrossOriginError).code).toBe('platform.cross-origin');
    expect((err as Error).message).not.toContain('pw');
  });
});

describe('paginate', () => {
  const run = async (pages: Record<string, unknown>) => {
    const fetched: string[] = [];
    const items: unknown[] = [];
    const gen = paginate({
      first: new URL(`${origin}/x`),
      origin,
      route: '/x',
      fetch: async (url) => {
        fetched.push(url.pathname + url.search);
        return pages[url.pathname + url.search];
      },
      parseItem: (item, path) => ({ item, path }),
    });
    for await (const i of gen) items.push(i);
    return { fetched, items };
  };

  it('follows next across pages and names item paths', async () => {
    const { fetched, items } = await run({
      '/x': { count: 3, next: '/x?page=2', previous: null, results: ['a', 'b'] },
      '/x?page=2': { count: 3, next: null, previous: '/x', results: ['c'] },
    });
    expect(fetched).toEqual(['/x', '/x?page=2']);
    expect(items).toEqual([
      { item: 'a', path: 'results.0' },
      { item: 'b', path: 'results.1' },
      { item: 'c', path: 'results.0' },
    ]);
  });

  it('reads an array and a single record', async () => {
    expect((await run({ '/x': [1, 2] })).items).toEqual([
      { item: 1, path: '0' },
      { item: 2, path: '1' },
    ]);
    expect((await run({ '/x': { id: 9 } })).items).toEqual([{ item: { id: 9 }, path: '' }]);
  });

  it('stops a next loop', async () => {
    await expect(
      run({
        '/x': { next: '/x?page=2', results: [1] },
        '/x?page=2': { next: '/x', results: [2] },
      }),
    ).rejects.toBeInstanceOf(InvalidResponseError);
  });

  it('refuses a cross-origin next before fetching it', async () => {
    const p = run({ '/x': { next: 'http://evil.example/x?page=2', results: [1] } });
    await expect(p).rejects.toBeInstanceOf(CrossOriginError);
  });
});
