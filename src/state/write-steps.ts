/**
 * The two Redis steps of one platform write, each a single Lua round trip
 * (lua/claim-writes.lua, lua/finish-writes.lua), so that a write costs a
 * handful of Redis commands:
 *
 * - `claim`, before the request: is the run still taking writes, has this
 *   line settled already, and for a create the atomic claim of its
 *   identity keys (refused when a key is pending or already mapped;
 *   otherwise every key is marked pending).
 * - `finish`, after the answer, for a batch of writes that ended meanwhile:
 *   records the confirmed ones (identity keys → platform id, the record's
 *   state, their pending marks cleared: the same entries `RecordStates.commit`
 *   writes), clears the pending marks of creates that did not land, and
 *   settles each line once (as `RunProgress.settle`: counted, its failure
 *   row kept, an unknown create answered later moved to its counter), and
 *   drops the run's plan chunks whose lines have all settled (see
 *   planned-writes.ts). One script, so a record is never committed without
 *   its line settled.
 */
import type { RedisClient } from '../redis/connection.js';
import { callScript } from '../redis/scripts.js';
import type { Entity } from '../sync/identity.js';
import { redisCall } from './errors.js';
import { RunField, type KeyLayout } from './keys.js';
import type { LayoutCheck } from './layout.js';
import type { Numbering } from './numbering.js';
import { packPending, packRecord } from './packing.js';
import type { WriteOutcome } from './progress.js';
import { storable, type FailureRow, type RunCounter } from './runs.js';

/** What the claim before a write found. */
export type WriteClaim =
  /** The run has ended, is gone or was asked to cancel: no more writes. */
  | 'ended'
  /** This line has settled in this round. */
  | 'settled'
  /** A create of one of its keys is pending (outcome unknown). */
  | 'pending'
  /** One of its keys maps to a platform record already. */
  | 'exists'
  /** Send it (a create's keys are marked pending). */
  | 'go';

export interface ClaimRequest {
  runId: string;
  entity: Entity;
  line: number;
  /** Identity keys of a create (marked pending); none for an update. */
  createKeys?: readonly string[];
}

/** A write that has ended, to settle (and commit, when it was confirmed). */
export interface FinishedWrite {
  line: number;
  outcome: WriteOutcome;
  failure?: FailureRow;
  /** Identity keys: mapped to `commit.platformId` when confirmed, their pending marks cleared. */
  keys: readonly string[];
  /** Whether the pending marks of `keys` are cleared (a create that did not land, or committed). */
  clearPending: boolean;
  commit?: { platformId: number; hash: string; job: string };
  /**
   * The first line of the plan chunk holding this write (`PlannedWrites.located`):
   * when this settles the line, the chunk is counted down, and dropped once all its
   * lines have settled (see planned-writes.ts). Left out, the chunk is kept to the
   * run's end: for a settle that may leave pending marks finalize verifies by the plan.
   */
  planChunk?: number;
}

export interface FinishReply {
  settled: number;
  planned: number;
  /** Per write: whether this call settled its line (false: settled before). */
  first: boolean[];
}

const UNKNOWN = RunField.counter('pendingCreates');

export class WriteSteps {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeyLayout,
    private readonly runNumbers: Numbering,
    private readonly jobNumbers: Numbering,
    private readonly now: () => number,
    /** Refuses state of a layout this release cannot use before a write is settled. */
    private readonly layout: LayoutCheck,
  ) {}

  /** Claims one write (see `claimAll`). */
  async claim(req: ClaimRequest): Promise<WriteClaim> {
    const [answer] = await this.claimAll(req.runId, req.entity, [req]);
    return answer!;
  }

  /**
   * Claims writes of one run and entity in one script, each on its own and in
   * order (a later one sees what an earlier one marked pending): the run is
   * read once for them all.
   */
  async claimAll(
    runId: string,
    entity: Entity,
    reqs: readonly Omit<ClaimRequest, 'runId' | 'entity'>[],
  ): Promise<WriteClaim[]> {
    if (reqs.length === 0) return [];
    const k = this.keys;
    const fixed = [k.run(runId), k.settled(runId), k.pending(entity)];
    const buckets = new Map<string, number>();
    const args: string[] = [packPending({ runId, since: this.now() })];
    for (const req of reqs) {
      const keys = req.createKeys ?? [];
      args.push(String(req.line), req.createKeys ? '1' : '0', String(keys.length));
      for (const key of keys) {
        const bucket = k.ids(entity, k.idBucketOf(key));
        let ix = buckets.get(bucket);
        if (ix === undefined) buckets.set(bucket, (ix = fixed.length + buckets.size + 1));
        args.push(String(ix), key);
      }
    }
    return (await redisCall('claiming writes', () =>
      callScript(
        this.redis,
        'claim-writes',
        fixed.length + buckets.size,
        ...fixed,
        ...buckets.keys(),
        ...args,
      ),
    )) as WriteClaim[];
  }

  /**
   * Releases the pending marks a create's claim set, when the platform
   * answered that it did not apply (a 429, a refusal, a transient fault), so
   * the create may go again; kept when the line has settled meanwhile.
   */
  async release(
    runId: string,
    entity: Entity,
    line: number,
    keys: readonly string[],
  ): Promise<void> {
    if (keys.length === 0) return;
    const k = this.keys;
    await redisCall('releasing a create claim', () =>
      callScript(
        this.redis,
        'release-claim',
        k.settled(runId),
        k.pending(entity),
        String(line),
        ...keys,
      ),
    );
  }

  /**
   * Renews a queue job's lock (`key`, BullMQ's `<queue>:<id>:lock`) for `ms`
   * while `token` holds it; false when another worker holds it now.
   */
  async renewLock(key: string, token: string, ms: number): Promise<boolean> {
    const n = await redisCall('renewing a write lock', () =>
      callScript(this.redis, 'renew-lock', key, token, String(ms)),
    );
    return n === 1;
  }

  /**
   * Settles writes that ended, committing the confirmed ones (see the top of
   * this file); the layout is checked, and recorded under a new prefix, first.
   */
  async finish(
    runId: string,
    entity: Entity,
    writes: readonly FinishedWrite[],
  ): Promise<FinishReply> {
    await this.layout.check();
    const k = this.keys;
    const runNumber = await this.runNumbers.numberOf(runId);
    const jobNumbers = new Map<string, number>();
    for (const w of writes) {
      if (w.commit && !jobNumbers.has(w.commit.job)) {
        jobNumbers.set(w.commit.job, await this.jobNumbers.numberOf(w.commit.job));
      }
    }
    const fixed = [
      k.settled(runId),
      k.run(runId),
      k.failures(runId),
      k.unknownCreates(runId),
      k.pending(entity),
      k.entityInfo(entity),
      k.plan(runId),
      k.planIndex(runId),
    ];
    const buckets = new Map<string, number>();
    const indexOf = (key: string): number => {
      let ix = buckets.get(key);
      if (ix === undefined) {
        ix = fixed.length + buckets.size + 1;
        buckets.set(key, ix);
      }
      return ix;
    };
    const now = this.now();
    const args: string[] = [
      String(now),
      UNKNOWN,
      RunField.counter('writesSettled' satisfies RunCounter),
      RunField.counter('writesPlanned' satisfies RunCounter),
      String(writes.length),
    ];
    for (const w of writes) {
      const counter =
        w.outcome === 'pending' ? UNKNOWN : RunField.counter(w.outcome satisfies RunCounter);
      const c = w.commit;
      const keys = c || w.clearPending ? w.keys : [];
      args.push(
        String(w.line),
        counter,
        w.failure ? JSON.stringify(storable(w.failure)) : '',
        c ? String(indexOf(k.recs(entity, k.recBucketOf(c.platformId)))) : '0',
        c ? String(c.platformId) : '',
        c
          ? packRecord({
              hash: c.hash,
              syncedAt: now,
              runNumber,
              jobNumber: jobNumbers.get(c.job)!,
            })
          : '',
        w.planChunk === undefined ? '' : String(w.planChunk),
        String(keys.length),
      );
      for (const key of keys) {
        args.push(c ? String(indexOf(k.ids(entity, k.idBucketOf(key)))) : '0', key);
      }
    }
    const reply = (await redisCall('settling writes', () =>
      callScript(
        this.redis,
        'finish-writes',
        fixed.length + buckets.size,
        ...fixed,
        ...buckets.keys(),
        ...args,
      ),
    )) as number[];
    return {
      settled: reply[0]!,
      planned: reply[1]!,
      first: reply.slice(2).map((f) => f === 1),
    };
  }
}
