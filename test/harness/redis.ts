import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, inject } from 'vitest';
import { primariesOf, type RedisClient } from '../../src/redis/connection.js';

/** A key prefix of its own for one test file, with the hash tag Redis Cluster needs. */
export function randomPrefix(): string {
  return `{crm-sync-test-${randomBytes(6).toString('hex')}}`;
}

export function redisUrl(): string {
  return inject('redisUrl');
}

/**
 * A Redis connection for a test file, with a random prefix. After the file,
 * every key under that prefix is deleted (by SCAN, never FLUSHDB: the Redis
 * may be one we did not start) and the connection is closed.
 */
export function useRedis(): { redis: Redis; prefix: string; url: string } {
  const url = redisUrl();
  const prefix = randomPrefix();
  const redis = new Redis(url, { maxRetriesPerRequest: 3, lazyConnect: false });
  afterAll(async () => {
    await deleteByPrefix(redis, prefix);
    await redis.quit();
  });
  return { redis, prefix, url };
}

/** The MATCH pattern of every key under `prefix` (its glob characters escaped). */
export function prefixPattern(prefix: string): string {
  return `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`;
}

/**
 * The keys matching `pattern`, a batch at a time, with the node holding them:
 * a whole SCAN (one call covers only part of a busy keyspace), of each
 * primary on a cluster (a node lists only the keys it holds).
 */
async function* scanBatches(
  client: RedisClient,
  pattern: string,
): AsyncGenerator<{ node: Redis; keys: string[] }> {
  for (const node of primariesOf(client)) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) yield { node, keys };
    } while (cursor !== '0');
  }
}

/**
 * Every key matching `pattern` (see `scanBatches`), sorted, each once: SCAN
 * may return a key twice when the keyspace shrinks between its calls, as
 * it does while other test files delete theirs on the same server.
 */
export async function keysMatching(client: RedisClient, pattern: string): Promise<string[]> {
  const out = new Set<string>();
  for await (const { keys } of scanBatches(client, pattern)) for (const k of keys) out.add(k);
  return [...out].sort();
}

export async function deleteByPrefix(client: RedisClient, prefix: string): Promise<void> {
  for await (const { node, keys } of scanBatches(client, prefixPattern(prefix))) {
    await node.unlink(...keys);
  }
}
