import { describe, expect, it } from 'vitest';
import { freePort, startRedisServer, removeDir } from '../harness/redis-server.js';
import { useRedis } from '../harness/redis.js';
import { redactSecrets } from '../../src/log.js';
import {
  RedisUnavailableError,
  checkEvictionPolicy,
  closeRedis,
  connectProducer,
  createRedis,
  safeRedisUrl,
  whenReady,
} from '../../src/redis/connection.js';

const { url, redis } = useRedis();

describe('connections', () => {
  it('a producer fails fast with one clear line, without the password', async () => {
    const port = await freePort();
    const started = Date.now();
    const err = await connectProducer(`redis://user:s3cret-pass@127.0.0.1:${port}/0`).catch(
      (e: unknown) => e,
    );
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(err).toBeInstanceOf(RedisUnavailableError);
    const e = err as RedisUnavailableError;
    expect(e.code).toBe('redis.unavailable');
    expect(e.message).toBe(`Redis at redis://127.0.0.1:${port}/0 is not reachable (ECONNREFUSED)`);
    expect(e.message).not.toContain('s3cret-pass');
    // The password is registered as a secret as soon as the URL is seen.
    expect(redactSecrets('auth s3cret-pass')).toBe('auth [REDACTED]');
  });

  it('a producer connects and answers when Redis is up', async () => {
    const producer = await connectProducer(url);
    expect(await producer.ping()).toBe('PONG');
    await closeRedis(producer);
  });

  it('strips credentials from URLs', () => {
    expect(safeRedisUrl('redis://:pw@redis:6379')).toBe('redis://redis:6379');
    expect(safeRedisUrl('rediss://u:pw@h:1/2')).toBe('rediss://h:1/2');
  });

  it('reads the eviction policy and warns when it is not noeviction', async () => {
    const warnings: unknown[] = [];
    const logger = { warn: (...args: unknown[]) => warnings.push(args) };
    expect(await checkEvictionPolicy(redis, logger as never)).toBe('noeviction');
    expect(warnings).toHaveLength(0);
  });

  it('a worker connection waits through a Redis restart and its commands complete', async () => {
    const server = await startRedisServer();
    const worker = createRedis('worker', server.url);
    try {
      await whenReady(worker);
      await worker.set('k', '1');
      await server.stop();
      // Issued while Redis is down: queued, not failed.
      const pending = worker.get('k').then((v) => v);
      await new Promise((r) => setTimeout(r, 300));
      await server.start();
      // No AOF here: the restarted server is empty, and the queued GET succeeds.
      await expect(pending).resolves.toBeNull();
    } finally {
      await closeRedis(worker);
      await server.stop();
      removeDir(server.dir);
    }
  });
});
