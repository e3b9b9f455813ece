import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, inject } from 'vitest';
import { primariesOf, type RedisClient } from '../../src/queue/connection.js';

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

export async function deleteByPrefix(client: RedisClient, prefix: string): Promise<void> {
  const pattern = `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`;
  // On a cluster, SCAN each primary: a node lists only the keys it holds.
  for (const redis of primariesOf(client)) {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await redis.unlink(...keys);
    } while (cursor !== '0');
  }
}
