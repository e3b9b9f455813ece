/**
 * The Redis store of sync state: one object over one Redis connection and
 * one key prefix (with a `{…}` hash tag, so it works on Redis Cluster). It
 * builds one part per kind of state and exposes each: a caller calls the part
 * that does the work (`store.runs.get(id)`), and nothing forwards. The key
 * layout is in docs/STATE.md. Every batch operation takes a fixed, small
 * number of round trips, whatever the batch size.
 *
 * Typical use by a run, per batch of mapped rows: `claims.claim` →
 * `records.lookup` → `planBatch` (src/sync) → `plannedWrites.save` and
 * `seen.mark` (adoptions go straight to `records.commit`). The writes, a
 * chunk of planned lines at a time: `writes.claimAll` before the requests (a
 * create's identity keys are marked pending there) and `writes.finish` after
 * the answers (commits the confirmed writes, clears the pending marks of
 * creates that did not land, settles each line once). At the end
 * `records.orphans` and `progress.clear`.
 *
 * The store is the only way to sync state: no caller builds a key or sends a
 * command itself (the layout is in keys.ts alone).
 */
import type { RedisClient } from '../redis/connection.js';
import { DEFAULT_PREFIX } from '../defaults.js';
import { silentLogger, type Logger } from '../log.js';
import { redisCall } from './errors.js';
import { DEFAULT_BUCKETS, KeyLayout, type Buckets } from './keys.js';
import { LayoutCheck } from './layout.js';
import { PlatformIndex } from './platform-index.js';
import { RecordStates } from './records.js';
import { Numbering } from './numbering.js';
import { Runs } from './runs.js';
import { RunProgress } from './progress.js';
import { PlannedWrites } from './planned-writes.js';
import { DEFAULT_RUN_HISTORY } from '../defaults.js';
import { RunRetention } from './run-retention.js';
import { WriteSteps } from './write-steps.js';
import { SurvivorClaims } from './survivor-claims.js';
import { IdentityClaims } from './identity-claims.js';
import { SeenRecords } from './seen-records.js';

export interface StateStoreOptions {
  /** Key prefix with a hash tag; default `{crm-sync}`. */
  prefix?: string;
  /** Bucket counts of the per-record maps (part of the layout: never change them for a prefix). */
  buckets?: Buckets;
  /** TTL of a run's planning scratch; default 7 days. */
  scratchTtlMs?: number;
  /** Runs kept per job definition; older ended runs are forgotten as new ones start. Default 1,000. */
  runHistory?: number;
  /** TTL of a platform listing while it is being built; default 24 hours. */
  indexBuildTtlMs?: number;
  /** How long a replaced index generation stays readable; default 10 minutes. */
  indexGraceMs?: number;
  /** The clock (ms since the epoch); default `Date.now`. */
  now?: () => number;
  /** Where what the store recovers from on its own is told (a failed prune); default silent. */
  logger?: Logger;
}

const DAY = 24 * 60 * 60 * 1000;

export class StateStore {
  /** The key layout (for tests and benchmarks that inspect what is stored). */
  readonly keys: KeyLayout;
  /**
   * The layout check: `assertRead` refuses (StateError saying what to do)
   * state of a layout this release cannot use and records none; workers and
   * the scheduler call it before they start.
   */
  readonly layout: LayoutCheck;
  /** A run's write progress: settled lines, outcome counters, unknown creates. */
  readonly progress: RunProgress;
  /** The claim before a platform write and the settling after it (one script each). */
  readonly writes: WriteSteps;
  /** Run records and their failure rows. */
  readonly runs: Runs;
  /** Record state per entity: identity keys, the last confirmed writes, pending creates. */
  readonly records: RecordStates;
  /** What the last listing of the platform found, per entity. */
  readonly index: PlatformIndex;
  /** A run's planned writes, saved while it plans and read as it writes. */
  readonly plannedWrites: PlannedWrites;
  /** The platform ids a run's export maps to (for the orphan report). */
  readonly seen: SeenRecords;
  /** A run's identity claims while it plans (first claimer wins; the rest are conflicts). */
  readonly claims: IdentityClaims;
  /** A run's identity claims under a survivor rule, and the rows that lost. */
  readonly survivors: SurvivorClaims;

  /**
   * @param connection The store's Redis connection. Public only for what is
   *   not sync state, a health check's PING; state goes through the parts.
   */
  constructor(
    readonly connection: RedisClient,
    opts: StateStoreOptions = {},
  ) {
    const now = opts.now ?? Date.now;
    this.keys = new KeyLayout(opts.prefix ?? DEFAULT_PREFIX, opts.buckets ?? DEFAULT_BUCKETS);
    this.layout = new LayoutCheck(connection, this.keys);
    const runNumbers = new Numbering(connection, this.keys.runIds(), 'run');
    const jobNumbers = new Numbering(connection, this.keys.jobIds(), 'job');
    this.records = new RecordStates(connection, this.keys, {
      runNumbers,
      jobNumbers,
      now,
      layout: this.layout,
      jobOfRun: async (id) => (await this.runs.get(id))?.job,
    });
    this.index = new PlatformIndex(connection, this.keys, {
      buildTtlMs: opts.indexBuildTtlMs ?? DAY,
      graceMs: opts.indexGraceMs ?? 10 * 60 * 1000,
      now,
      layout: this.layout,
    });
    this.runs = new Runs(connection, this.keys, {
      now,
      layout: this.layout,
      retention: new RunRetention(connection, this.keys, opts.runHistory ?? DEFAULT_RUN_HISTORY),
      logger: opts.logger ?? silentLogger,
    });
    this.plannedWrites = new PlannedWrites(connection, this.keys, opts.scratchTtlMs ?? 7 * DAY);
    this.claims = new IdentityClaims(
      connection,
      this.keys,
      opts.scratchTtlMs ?? 7 * DAY,
      this.plannedWrites,
    );
    this.seen = new SeenRecords(connection, this.keys, opts.scratchTtlMs ?? 7 * DAY);
    this.survivors = new SurvivorClaims(
      connection,
      this.keys,
      opts.scratchTtlMs ?? 7 * DAY,
      this.claims.claimTtls,
      this.claims.claimed,
    );
    this.progress = new RunProgress(connection, this.keys, this.claims);
    this.writes = new WriteSteps(connection, this.keys, runNumbers, jobNumbers, now, this.layout);
  }

  /**
   * Whether this prefix holds any record state or platform listing (a prefix
   * never synced holds none): the layout record is written before the first
   * of either. Writes nothing.
   */
  async hasState(): Promise<boolean> {
    const n = await redisCall('checking for state', () => this.connection.exists(this.keys.meta()));
    return n === 1;
  }
}
