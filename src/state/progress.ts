/**
 * A run's progress in Redis, kept exact under at-least-once delivery: a write
 * may be processed twice (a worker killed after the request, before its chunk
 * was marked done), so each write settles once per run and line (the settle
 * itself is the write's finish script, src/state/write-steps.ts); here are the
 * reads and the corrections around it: settled lines, creates confirmed by
 * listing, lines sent again, counts. Built by the StateStore over its
 * connection and key layout (`store.progress`).
 */
import type { RedisClient } from '../redis/connection.js';
import { callScript } from '../redis/scripts.js';
import { redisCall } from './errors.js';
import { RunField, type KeyLayout } from './keys.js';
import { execAll, unlinks } from './pipeline.js';
import type { IdentityClaims } from './identity-claims.js';
import type { RunCounter, RunCounts } from './runs.js';
import { RUN_COUNTERS } from './runs.js';

/** Creates settled with an unknown outcome, not yet confirmed: a counter of the run hash. */
const UNKNOWN = RunField.counter('pendingCreates');

/** How a write ended, and the counter it adds to. */
export type WriteOutcome = 'created' | 'updated' | 'adopted' | 'rejected' | 'failed' | 'pending';

export class RunProgress {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeyLayout,
    /** The run's identity claims: whether the release left any claim bucket to delete. */
    private readonly claims: IdentityClaims,
  ) {}

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

  /**
   * Lines settled in this round are forgotten, so a write sent again (a
   * re-created pending) settles again; their plan chunks count them as
   * unsettled again, so they are kept until these lines settle anew.
   */
  async unsettle(runId: string, lines: readonly number[]): Promise<void> {
    if (lines.length === 0) return;
    const k = this.keys;
    await redisCall('unsettling writes', () =>
      callScript(
        this.redis,
        'unsettle',
        k.settled(runId),
        k.unknownCreates(runId),
        k.plan(runId),
        k.planIndex(runId),
        ...lines.map(String),
      ),
    );
  }

  /**
   * Counts as created the unknown creates the finalize's listing found, each
   * line once: one answered late was counted when its answer came.
   */
  async confirmCreated(runId: string, lines: readonly number[]): Promise<void> {
    if (lines.length === 0) return;
    await redisCall('confirming creates', () =>
      callScript(
        this.redis,
        'confirm-created',
        this.keys.unknownCreates(runId),
        this.keys.run(runId),
        UNKNOWN,
        RunField.counter('created' satisfies RunCounter),
        ...lines.map(String),
      ),
    );
  }

  /**
   * How many of the run's creates settled with an unknown outcome and are
   * not verified yet (a listing has not found them, nor sent them again).
   */
  async unverifiedCreates(runId: string): Promise<number> {
    return redisCall('counting unverified creates', () =>
      this.redis.scard(this.keys.unknownCreates(runId)),
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
    unlinks(tx, [k.failures(runId), ...k.progress(runId), ...k.scratch(runId)]);
    await execAll(tx, 'resetting a planning pass');
  }

  /** Deletes the run's scratch and progress at its end (the run record and failures stay). */
  async clear(runId: string): Promise<void> {
    const k = this.keys;
    // Claim buckets the claims' release unlinked are not named again (16,384 names).
    const unlinked = await this.claims.releasedAndUnlinked(runId);
    const p = this.redis.pipeline();
    unlinks(p, [...k.progress(runId), ...k.scratch(runId, !unlinked)]);
    await execAll(p, 'clearing run progress');
  }
}
