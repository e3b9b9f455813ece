/**
 * The per-job lock: at most one active run of a job. A holder proves itself
 * with its token (the run id is a good one); renew and release only act for
 * the holder (compare-and-set in Lua), so a holder whose lock expired can
 * never remove its successor's.
 */
import type { Redis } from 'ioredis';
import { redisError } from './errors.js';
import type { KeyLayout } from './keys.js';

const RENEW = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`;
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

export class JobLocks {
  constructor(
    private readonly redis: Redis,
    private readonly keys: KeyLayout,
  ) {}

  /** Takes the lock if nobody holds it; true when taken. */
  async acquire(job: string, token: string, ttlMs: number): Promise<boolean> {
    try {
      return (await this.redis.set(this.keys.jobLock(job), token, 'PX', ttlMs, 'NX')) === 'OK';
    } catch (err) {
      throw redisError('taking a job lock', err);
    }
  }

  /** Extends the lock; false when `token` no longer holds it. */
  async renew(job: string, token: string, ttlMs: number): Promise<boolean> {
    try {
      return (
        Number(await this.redis.eval(RENEW, 1, this.keys.jobLock(job), token, String(ttlMs))) === 1
      );
    } catch (err) {
      throw redisError('renewing a job lock', err);
    }
  }

  /** Releases the lock; false when `token` did not hold it. */
  async release(job: string, token: string): Promise<boolean> {
    try {
      return Number(await this.redis.eval(RELEASE, 1, this.keys.jobLock(job), token)) === 1;
    } catch (err) {
      throw redisError('releasing a job lock', err);
    }
  }

  /** The token holding the lock (the active run), or null. */
  async holder(job: string): Promise<string | null> {
    try {
      return await this.redis.get(this.keys.jobLock(job));
    } catch (err) {
      throw redisError('reading a job lock', err);
    }
  }
}
