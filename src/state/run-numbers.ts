/**
 * Run ids are given by callers (the queue's job id) and can be long; record
 * state stores a run *number* instead (a few bytes, base36), assigned once
 * per run id in `<prefix>:runs:ids` (`r:<runId>` → n, `s:<n>` → runId).
 * Numbers never change once given, so they are cached for the process.
 */
import type { Redis } from 'ioredis';
import { redisError } from './errors.js';
import type { KeyLayout } from './keys.js';

const ASSIGN = `
local n = redis.call('HGET', KEYS[1], 'r:' .. ARGV[1])
if n then return tonumber(n) end
n = redis.call('HINCRBY', KEYS[1], 'n', 1)
redis.call('HSET', KEYS[1], 'r:' .. ARGV[1], n, 's:' .. n, ARGV[1])
return n
`;

export class RunNumbers {
  private readonly numbers = new Map<string, number>();
  private readonly ids = new Map<number, string>();

  constructor(
    private readonly redis: Redis,
    private readonly keys: KeyLayout,
  ) {}

  /** The number of `runId`, assigning the next one on first use. */
  async numberOf(runId: string): Promise<number> {
    const cached = this.numbers.get(runId);
    if (cached !== undefined) return cached;
    let n: number;
    try {
      n = Number(await this.redis.eval(ASSIGN, 1, this.keys.runIds(), runId));
    } catch (err) {
      throw redisError('numbering a run', err);
    }
    this.remember(runId, n);
    return n;
  }

  /** The number of `runId` if it has one, without assigning (a read-only caller's view). */
  async peek(runId: string): Promise<number | undefined> {
    const cached = this.numbers.get(runId);
    if (cached !== undefined) return cached;
    let value: string | null;
    try {
      value = await this.redis.hget(this.keys.runIds(), `r:${runId}`);
    } catch (err) {
      throw redisError('reading run numbers', err);
    }
    if (value === null) return undefined;
    this.remember(runId, Number(value));
    return Number(value);
  }

  /** The run ids of `numbers` (`undefined` where unknown), in one round trip. */
  async idsOf(numbers: readonly number[]): Promise<(string | undefined)[]> {
    const missing = [...new Set(numbers.filter((n) => !this.ids.has(n)))];
    if (missing.length > 0) {
      let values: (string | null)[];
      try {
        values = await this.redis.hmget(this.keys.runIds(), ...missing.map((n) => `s:${n}`));
      } catch (err) {
        throw redisError('reading run numbers', err);
      }
      missing.forEach((n, i) => {
        const id = values[i];
        if (id) this.remember(id, n);
      });
    }
    return numbers.map((n) => this.ids.get(n));
  }

  private remember(runId: string, n: number): void {
    this.numbers.set(runId, n);
    this.ids.set(n, runId);
  }
}
