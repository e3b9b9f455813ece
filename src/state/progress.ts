/**
 * A run's progress in Redis, kept exact under at-least-once delivery: a write
 * job may be processed twice (a worker killed after the request, before the
 * job was marked done), so each write settles once per run and line, in one
 * Lua script that also counts its outcome and records its failure row.
 */
import type { StateStore } from './store.js';
import type { FailureRow, RunCounter, RunCounts } from './runs.js';
import { RUN_COUNTERS } from './runs.js';

// KEYS: settled set, run hash, failures list, unknown-creates set. ARGV: line, counter,
// failure JSON ('' for none). Returns {settled, planned} after this call, or {-1, planned}
// when the line had settled before. A line settled as an unknown create and answered later
// (its attempt was handed to another worker while waiting for the platform) takes the
// answer's counter then, once: the finalize's listing no longer sees it pending.
const SETTLE = `
if redis.call('SADD', KEYS[1], ARGV[1]) == 0 then
  if ARGV[2] ~= 'pendingCreates' and redis.call('SREM', KEYS[4], ARGV[1]) == 1 then
    redis.call('HINCRBY', KEYS[2], 'c:pendingCreates', -1)
    redis.call('HINCRBY', KEYS[2], 'c:' .. ARGV[2], 1)
    if ARGV[3] ~= '' then redis.call('RPUSH', KEYS[3], ARGV[3]) end
  end
  return {-1, tonumber(redis.call('HGET', KEYS[2], 'c:writesPlanned') or '0')}
end
if ARGV[2] == 'pendingCreates' then redis.call('SADD', KEYS[4], ARGV[1]) end
redis.call('HINCRBY', KEYS[2], 'c:' .. ARGV[2], 1)
local settled = redis.call('HINCRBY', KEYS[2], 'c:writesSettled', 1)
if ARGV[3] ~= '' then redis.call('RPUSH', KEYS[3], ARGV[3]) end
return {settled, tonumber(redis.call('HGET', KEYS[2], 'c:writesPlanned') or '0')}
`;

// KEYS: unknown-creates set, run hash. ARGV: lines found on the platform.
const CONFIRM = `
local n = 0
for _, line in ipairs(ARGV) do n = n + redis.call('SREM', KEYS[1], line) end
if n > 0 then
  redis.call('HINCRBY', KEYS[2], 'c:pendingCreates', -n)
  redis.call('HINCRBY', KEYS[2], 'c:created', n)
end
return n
`;

/** How a write ended, and the counter it adds to. */
export type WriteOutcome = 'created' | 'updated' | 'adopted' | 'rejected' | 'failed' | 'pending';

export class RunProgress {
  constructor(private readonly store: StateStore) {}

  private settledKey(runId: string): string {
    return `${this.store.keys.run(runId)}:settled`;
  }

  /** Lines settled as creates of unknown outcome, not yet confirmed. */
  private unknownKey(runId: string): string {
    return `${this.store.keys.run(runId)}:unknown-creates`;
  }

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
    const counter: RunCounter | 'pendingCreates' =
      outcome === 'pending' ? 'pendingCreates' : outcome;
    const reply = (await this.store.redis.eval(
      SETTLE,
      4,
      this.settledKey(runId),
      this.store.keys.run(runId),
      this.store.keys.failures(runId),
      this.unknownKey(runId),
      String(line),
      counter,
      failure ? JSON.stringify(failure) : '',
    )) as [number, number];
    return { first: reply[0] !== -1, settled: Math.max(reply[0], 0), planned: reply[1] };
  }

  /** Whether this write of the run has settled (a job added again after a crash is then a no-op). */
  async isSettled(runId: string, line: number): Promise<boolean> {
    return (await this.store.redis.sismember(this.settledKey(runId), String(line))) === 1;
  }

  /** Lines settled in this round are forgotten, so a write sent again (a re-created pending) settles again. */
  async unsettle(runId: string, lines: readonly number[]): Promise<void> {
    if (lines.length === 0) return;
    const tx = this.store.redis.multi();
    tx.srem(this.settledKey(runId), ...lines.map(String));
    tx.srem(this.unknownKey(runId), ...lines.map(String));
    await tx.exec();
  }

  /**
   * Counts as created the unknown creates the finalize's listing found, each
   * line once: one answered late was counted when its answer came.
   */
  async confirmCreated(runId: string, lines: readonly number[]): Promise<void> {
    if (lines.length === 0) return;
    await this.store.redis.eval(
      CONFIRM,
      2,
      this.unknownKey(runId),
      this.store.keys.run(runId),
      ...lines.map(String),
    );
  }

  /** Sets counters to absolute values (the planning pass owns its counts). */
  async setCounts(
    runId: string,
    counts: Partial<RunCounts> | Record<string, number>,
  ): Promise<void> {
    const fields: Record<string, string> = {};
    for (const [name, n] of Object.entries(counts)) fields[`c:${name}`] = String(n);
    if (Object.keys(fields).length > 0)
      await this.store.redis.hset(this.store.keys.run(runId), fields);
  }

  /**
   * Forgets what a planning pass of this run learned, for a pass started
   * again after a crash: counters, failure rows, scratch, settled lines.
   */
  async resetPlanning(runId: string): Promise<void> {
    const k = this.store.keys;
    const tx = this.store.redis.multi();
    tx.hdel(k.run(runId), ...RUN_COUNTERS.map((c) => `c:${c}`), 'c:pendingCreates');
    tx.unlink(
      k.failures(runId),
      this.settledKey(runId),
      this.unknownKey(runId),
      ...k.scratch(runId),
    );
    await tx.exec();
  }

  /** Deletes the run's scratch and settled set at its end (the run record and failures stay). */
  async clear(runId: string): Promise<void> {
    await this.store.redis.unlink(
      this.settledKey(runId),
      this.unknownKey(runId),
      ...this.store.keys.scratch(runId),
    );
  }
}
