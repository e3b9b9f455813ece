/**
 * Short numbers for long names. Run ids are given by callers (the queue's job
 * id) and job names by users, and either can be long; record state stores a
 * *number* instead (a few bytes, base36), assigned once per name in one hash
 * (`<prefix>:runs:ids`, `<prefix>:jobs:ids`: `r:<name>` → n, `s:<n>` → name).
 * Numbers never change once given, so they are cached for the process: the
 * most recent `cacheSize` names (a worker numbers every run it writes for, so
 * an unbounded cache would grow with every run for as long as it lives).
 */
import type { RedisClient } from '../redis/connection.js';
import { callScript } from '../redis/scripts.js';
import { redisCall } from './errors.js';

/** Names cached per process by default: far more than the runs writing at once. */
export const NUMBERING_CACHE_SIZE = 10_000;

export class Numbering {
  private readonly numbers = new Map<string, number>();
  private readonly names = new Map<number, string>();

  /** `key`: the hash holding the numbers; `noun`: what is numbered, for error messages. */
  constructor(
    private readonly redis: RedisClient,
    readonly key: string,
    private readonly noun: string,
    private readonly cacheSize: number = NUMBERING_CACHE_SIZE,
  ) {}

  /** Names cached now (at most `cacheSize`). */
  get cachedCount(): number {
    return this.numbers.size;
  }

  /** The number of `name`, assigning the next one on first use. */
  async numberOf(name: string): Promise<number> {
    const cached = this.numbers.get(name);
    if (cached !== undefined) return cached;
    const n = Number(
      await redisCall(`numbering a ${this.noun}`, () =>
        callScript(this.redis, 'assign-number', this.key, name),
      ),
    );
    this.remember(name, n);
    return n;
  }

  /** The number of `name` if it has one, without assigning (a read-only caller's view). */
  async peek(name: string): Promise<number | undefined> {
    const cached = this.cached(name);
    if (cached !== undefined) return cached;
    const value: string | null = await redisCall(`reading ${this.noun} numbers`, () =>
      this.redis.hget(this.key, `r:${name}`),
    );
    return this.learned(name, value);
  }

  /** The number of `name` if this process knows it, with no round trip. */
  cached(name: string): number | undefined {
    return this.numbers.get(name);
  }

  /** Records the answer to `HGET key r:<name>` read by a caller's own pipeline. */
  learned(name: string, value: string | null): number | undefined {
    if (value === null) return undefined;
    this.remember(name, Number(value));
    return Number(value);
  }

  /** The names of `numbers` (`undefined` where unknown), in one round trip. */
  async namesOf(numbers: readonly number[]): Promise<(string | undefined)[]> {
    const missing = [...new Set(numbers.filter((n) => !this.names.has(n)))];
    if (missing.length > 0) {
      const values: (string | null)[] = await redisCall(`reading ${this.noun} numbers`, () =>
        this.redis.hmget(this.key, ...missing.map((n) => `s:${n}`)),
      );
      missing.forEach((n, i) => {
        const name = values[i];
        if (name) this.remember(name, n);
      });
    }
    return numbers.map((n) => this.names.get(n));
  }

  private remember(name: string, n: number): void {
    // First cached, first forgotten: a number is needed while its run writes.
    this.numbers.set(name, n);
    this.names.set(n, name);
    while (this.numbers.size > this.cacheSize) {
      const [oldest, number] = this.numbers.entries().next().value as [string, number];
      this.numbers.delete(oldest);
      this.names.delete(number);
    }
  }
}
