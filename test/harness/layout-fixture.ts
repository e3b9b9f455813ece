/**
 * The state of layout 1 as the previous release left it
 * (test/fixtures/layout-1/: see its README for how it was made), loaded into
 * a Redis under any prefix, and the platform records it describes recreated
 * in a sandbox with the same ids.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { PlatformClient } from '../../src/platform/client.js';
import type { CompanyRequest } from '../../src/platform/schemas.js';
import type { RedisClient } from '../../src/redis/connection.js';

export const LAYOUT1_DIR = resolve(import.meta.dirname, '..', 'fixtures', 'layout-1');

interface StoredKey {
  key: string;
  type: 'hash' | 'set' | 'zset' | 'list' | 'string';
  ttlMs?: number;
  value: unknown;
}

export interface Layout1Fixture {
  prefix: string;
  keys: StoredKey[];
  companies: Record<string, unknown>[];
}

export function readLayout1(): Layout1Fixture {
  return JSON.parse(readFileSync(resolve(LAYOUT1_DIR, 'state.json'), 'utf8')) as Layout1Fixture;
}

/** Writes every key of the fixture under `prefix` instead of its own; returns the fixture. */
export async function loadLayout1(redis: RedisClient, prefix: string): Promise<Layout1Fixture> {
  const f = readLayout1();
  const p = redis.pipeline();
  for (const k of f.keys) {
    const key = prefix + k.key.slice(f.prefix.length);
    if (k.type === 'hash') p.hset(key, k.value as Record<string, string>);
    else if (k.type === 'set') p.sadd(key, ...(k.value as string[]));
    else if (k.type === 'zset')
      p.zadd(key, ...(k.value as [string, string][]).flatMap(([m, s]) => [s, m]));
    else if (k.type === 'list') p.rpush(key, ...(k.value as string[]));
    else p.set(key, k.value as string);
    if (k.ttlMs !== undefined) p.pexpire(key, k.ttlMs);
  }
  await p.exec();
  return f;
}

const REQUEST_FIELDS = [
  'name',
  'website',
  'uuid',
  'external_id',
  'crm_account_id',
  'crm_company_id',
  'custom',
] as const;

/**
 * Creates the fixture's companies in a fresh sandbox, in id order, so each
 * gets the id it had (the sandbox numbers records 1, 2, …).
 */
export async function recreateCompanies(client: PlatformClient, f: Layout1Fixture): Promise<void> {
  const sorted = [...f.companies].sort((a, b) => (a.id as number) - (b.id as number));
  for (const c of sorted) {
    const body = Object.fromEntries(
      REQUEST_FIELDS.filter((k) => c[k] !== null && c[k] !== undefined).map((k) => [k, c[k]]),
    ) as CompanyRequest;
    const made = await client.createCompany(body);
    if (made.id !== c.id) throw new Error(`company ${String(c.id)} was recreated as ${made.id}`);
  }
}
