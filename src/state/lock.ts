/**
 * The per-job lock: at most one active run of a job. A holder proves itself
 * with its token (the run id is a good one); renew and release only act for
 * the holder (compare-and-set in Lua: lua/renew-lock-1.lua and
 * release-lock-1.lua), so a holder whose lock expired can never remove its
 * successor's.
 */
import type { RedisClient } from '../redis/connection.js';
import { callScript } from '../redis/scripts.js';
import { redisCall } from './errors.js';
import type { KeyLayout } from './keys.js';

export class JobLocks {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeyLayout,
  ) {}

  /** Takes the lock if nobody holds it; true when taken. */
  async acquire(job: string, token: string, ttlMs: number): Promise<boolean> {
    const reply = await redisCall('taking a job lock', () =>
      this.redis.set(this.keys.jobLock(job), token, 'PX', ttlMs, 'NX'),
    );
    return reply === 'OK';
  }

  /** Extends the lock; false when `token` no longer holds it. */
  async renew(job: string, token: string, ttlMs: number): Promise<boolean> {
    const reply = await redisCall('renewing a job lock', () =>
      callScript(this.redis, 'renew-lock', this.keys.jobLock(job), token, String(ttlMs)),
    );
    return Number(reply) === 1;
  }

  /** Releases the lock; false when `token` did not hold it. */
  async release(job: string, token: string): Promise<boolean> {
    const reply = await redisCall('releasing a job lock', () =>
      callScript(this.redis, 'release-lock', this.keys.jobLock(job), token),
    );
    return Number(reply) === 1;
  }

  /** The token holding the lock (the active run), or null. */
  async holder(job: string): Promise<string | null> {
    return redisCall('reading a job lock', () => this.redis.get(this.keys.jobLock(job)));
  }
}
