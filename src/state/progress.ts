/**
 * A run's progress in Redis, kept exact under at-least-once delivery: a write
 * job may be processed twice (a worker killed after the request, before the
 * job was marked done), so each write settles once per run and line, in one
 * Lua script that also counts its outcome and records its failure row. Built
 * by the StateStore over its connection and key layout (`store.progress`).
 */
import type { RedisClient } from '../queue/connection.js';
import { redisCall } from './errors.js';
import { RunField, type KeyLayout } from './keys.js';
import { execAll } from './pipeline.js';
import type { FailureRow, RunCounter, RunCounts } from './runs.js';
import { RUN_COUNTERS } from './runs.js';

// KEYS: settled set, run hash, failures list, unknown-creates set. ARGV: line, counter field,
// failure JSON ('' for none), then the fields of the unknown-creates, settled and planned
// counters. Returns {settled, planned} after this call, or {-1, planned} when the line had
// settled before. A line settled as an unknown create and answered later (its attempt was
// handed to another worker while waiting for the platform) takes the answer's counter then,
// once: the finalize's listing no longer sees it pending.
const SETTLE = `
local unknown, settledField, plannedField = ARGV[4], ARGV[5], ARGV[6]
if redis.call('SADD', KEYS[1], ARGV[1]) == 0 then
  if ARGV[2] ~= unknown and redis.call('SREM', KEYS[4], ARGV[1]) == 1 then
    redis.call('HINCRBY', KEYS[2], unknown, -1)
    redis.call('HINCRBY', KEYS[2], ARGV[2], 1)
    if ARGV[3] ~= '' then redis.call('RPUSH', KEYS[3], ARGV[3]) end
  end
  return {-1, tonumber(redis.call('HGET', KEYS[2], plannedField) or '0')}
end
if ARGV[2] == unknown then redis.call('SADD', KEYS[4], ARGV[1]) end
redis.call('HINCRBY', KEYS[2], ARGV[2], 1)
local settled = redis.call('HINCRBY', KEYS[2], settledField, 1)
if ARGV[3] ~= '' then redis.call('RPUSH', KEYS[3], ARGV[3]) end
return {settled, tonumber(redis.call('HGET', KEYS[2], plannedField) or '0')}
`;

// KEYS: unknown-creates set, run hash. ARGV: the unknown-creates and created counter fields,
// then the lines found on the platform.
const CONFIRM = `
local n = 0
for i = 3, #ARGV do n = n + redis.call('SREM', KEYS[1], ARGV[i]) end
if n > 0 then
  redis.call('HINCRBY', KEYS[2], ARGV[1], -n)
  redis.call('HINCRBY', KEYS[2], ARGV[2], n)
end
return n
`;

/** Creates settled with an unknown outcome, not yet confirmed: a counter of the run hash. */
const UNKNOWN = RunField.counter('pendingCreates');

/** How a write ended, and the counter it adds to. */
export type WriteOutcome = 'created' | 'updated' | 'adopted' | 'rejected' | 'failed' | 'pending';

export class RunProgress {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeyLayout,
  ) {}

  /**
   * Settles one write of a run. `pending` adds to no counter: the write is
   * settled for this round and its create is verified at finalize.
   */
  async settle(
    runId: string,
    line: number,
    outcome: WriteOutcome,
    failure?: FailureRow,
  ): Promise<{ first: boolean; settled: number; planned: number }> {
    const counter =
      outcome === 'pending' ? UNKNOWN : RunField.counter(outcome satisfies RunCounter);
    const k = this.keys;
    const reply: [number, number] = (await redisCall('settling a write', () =>
      this.redis.eval(
        SETTLE,
        4,
        k.settled(runId),
        k.run(runId),
        k.failures(runId),
        k.unknownCreates(runId),
        String(line),
        counter,
        failure ? JSON.stringify(failure) : '',
        UNKNOWN,
        RunField.counter('writesSettled' satisfies RunCounter),
        RunField.counter('writesPlanned' satisfies RunCounter),
      ),
    )) as [number, number];
    return { first: reply[0] !== -1, settled: Math.max(reply[0], 0), planned: reply[1] };
  }

  /** Whether this write of the run has settled (a job added again after a crash is then a no-op). */
  async isSettled(runId: string, line: number): Promise<boolean> {
    const n = await redisCall('reading settled writes', () =>
      this.redis.sismember(this.keys.settled(runId), String(line)),
    );
    return n === 1;
  }

  /** The lines of `lines` not settled in this round, in order. */
  async unsettledOf(runId: string, lines: readonly number[]): Promise<number[]> {
    if (lines.length === 0) return [];
    const flags: number[] = await redisCall('reading settled writes', () =>
      this.redis.smismember(this.keys.settled(runId), ...lines.map(String)),
    );
    return lines.filter((_, n) => flags[n] === 0);
  }

  /** Lines settled in this round are forgotten, so a write sent again (a re-created pending) settles again. */
  async unsettle(runId: string, lines: readonly number[]): Promise<void> {
    if (lines.length === 0) return;
    const tx = this.redis.multi();
    tx.srem(this.keys.settled(runId), ...lines.map(String));
    tx.srem(this.keys.unknownCreates(runId), ...lines.map(String));
    await execAll(tx, 'unsettling writes');
  }

  /**
   * Counts as created the unknown creates the finalize's listing found, each
   * line once: one answered late was counted when its answer came.
   */
  async confirmCreated(runId: string, lines: readonly number[]): Promise<void> {
    if (lines.length === 0) return;
    await redisCall('confirming creates', () =>
      this.redis.eval(
        CONFIRM,
        2,
        this.keys.unknownCreates(runId),
        this.keys.run(runId),
        UNKNOWN,
        RunField.counter('created' satisfies RunCounter),
        ...lines.map(String),
      ),
    );
  }

  /** Sets counters to absolute values (the planning pass owns its counts). */
  async setCounts(
    runId: string,
    counts: Partial<RunCounts> | Record<string, number>,
  ): Promise<void> {
    const fields: Record<string, string> = {};
    for (const [name, n] of Object.entries(counts)) fields[RunField.counter(name)] = String(n);
    if (Object.keys(fields).length === 0) return;
    await redisCall('setting run counters', () => this.redis.hset(this.keys.run(runId), fields));
  }

  /**
   * Forgets what a planning pass of this run learned, for a pass started
   * again after a crash: counters, failure rows, scratch, settled lines.
   */
  async resetPlanning(runId: string): Promise<void> {
    const k = this.keys;
    const tx = this.redis.multi();
    tx.hdel(k.run(runId), ...RUN_COUNTERS.map((c) => RunField.counter(c)), UNKNOWN);
    tx.unlink(k.failures(runId), ...k.progress(runId), ...k.scratch(runId));
    await execAll(tx, 'resetting a planning pass');
  }

  /** Deletes the run's scratch and progress at its end (the run record and failures stay). */
  async clear(runId: string): Promise<void> {
    await redisCall('clearing run progress', () =>
      this.redis.unlink(...this.keys.progress(runId), ...this.keys.scratch(runId)),
    );
  }
}
