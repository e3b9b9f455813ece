/**
 * Run records: what a run is (job, entity, mode, source, options), where it
 * is (status, phase), what it counted, how long its phases took, how it
 * ended; and every row it failed, with the reason, complete and in order.
 *
 * A run is one hash, `<prefix>:run:<id>`: plain fields, counters as
 * `c:<name>` (HINCRBY, so concurrent write workers count atomically) and
 * timings as `t:<name>`. Runs are listed newest first from sorted sets by
 * creation time, one for all runs and one per job.
 */
import { randomBytes } from 'node:crypto';
import type { RedisClient } from '../redis/connection.js';
import { callScript } from '../redis/scripts.js';
import { z } from 'zod';
import { MODES, type Mode } from '../sync/action.js';
import { ENTITIES, type Entity } from '../sync/identity.js';
import { FAILURE_KINDS } from './failure-kinds.js';
import { parseStored, redisCall, StateError } from './errors.js';
import { LAYOUT_VERSION, RunField, type KeyLayout } from './keys.js';
import { chunks, execAll } from './pipeline.js';
import { scrubText, type Logger } from '../log.js';
import type { LayoutCheck } from './layout.js';
import { stripCredentials } from './redaction.js';
import type { RunRetention } from './run-retention.js';

/** What became of a row: every row read ends in exactly one of these. */
export const RUN_OUTCOMES = [
  'created',
  'updated',
  'unchanged',
  'adopted',
  'invalid',
  'conflict',
  'duplicates',
  'rejected',
  'failed',
  'skipped',
  'unsupported',
] as const;

export const RUN_COUNTERS = [
  'read',
  ...RUN_OUTCOMES,
  // Not an outcome: optional fields left out of rows that were still synced (one per field),
  // and rows read as windows-1252 (one per row).
  'warnings',
  'orphans',
  'writesPlanned',
  'writesSettled',
  // Not an outcome: 429s the platform answered this run's writes (each paused the queue).
  'rateLimited',
] as const;
export type RunCounter = (typeof RUN_COUNTERS)[number];
export type RunCounts = Record<RunCounter, number>;

export const RUN_STATUSES = [
  'queued',
  'planning',
  'writing',
  'finalizing',
  'completed',
  'failed',
  'stopped',
  'cancelled',
] as const;
/**
 * `stopped`: a safety threshold stopped the run before any write.
 * `cancelled`: someone cancelled it (`crm-sync cancel`, the API); its writes in flight settled.
 */
export type RunStatus = (typeof RUN_STATUSES)[number];

export interface RunInit {
  /** The caller's id (the queue's job id); generated when absent. */
  id?: string;
  job: string;
  entity: Entity;
  mode: Mode;
  /** A path or URL; credentials are stripped before storing. */
  source: string;
  /** The run's options as given (`full`, `dryRun`, `force`, …): plain JSON, no secrets. */
  options?: Record<string, unknown>;
  /** Defaults to now. */
  createdAt?: number;
}

export interface RunRecord {
  id: string;
  job: string;
  entity: Entity;
  mode: Mode;
  source: string;
  options: Record<string, unknown>;
  status: RunStatus;
  /** A finer-grained step within the status, e.g. "listing platform companies". */
  phase?: string;
  createdAt: number;
  startedAt?: number;
  finishedAt?: number;
  /** Why it failed or stopped (scrubbed of credentials). */
  error?: string;
  /** Why the alert of the run's end was given up after its last delivery attempt (scrubbed). */
  alertUndelivered?: string;
  /** When a cancel was asked for (epoch ms): the run sends nothing more and ends `cancelled`. */
  cancelRequested?: number;
  /**
   * While its writes are being enqueued: the plan line they go on from
   * (0: the start), kept while the run waits for its queued writes to drain.
   */
  enqueueFrom?: number;
  /** Planned writes per chunk job, decided when the run starts to write (`chunkSize`). */
  writeChunk?: number;
  counts: RunCounts;
  /** Milliseconds per named phase. */
  timings: Record<string, number>;
}

export interface RunPatch {
  status?: RunStatus;
  phase?: string;
  startedAt?: number;
  finishedAt?: number;
  error?: string;
  alertUndelivered?: string;
  enqueueFrom?: number;
  writeChunk?: number;
  /** Merged into the stored timings. */
  timings?: Record<string, number>;
}

/** One row of a run that did not make it, and why; or a field of a row that did not (`warning`). */
export const FailureRowSchema = z.object({
  line: z.number().int(),
  kind: z.enum(FAILURE_KINDS),
  field: z.string().optional(),
  reason: z.string(),
  value: z.unknown().optional(),
  /** The row's identity key (e.g. `x:ACME-1`), where it had one: for a conflict or duplicate, the one shared. */
  identity: z.string().optional(),
  /** The row's CRM record: its strongest identity key (`x:salesforce:003…`), where known. */
  record: z.string().optional(),
  /** A duplicate's survivor: the row that keeps the record, and its CRM record. */
  survivor: z.object({ line: z.number().int(), record: z.string() }).optional(),
});
export type FailureRow = z.infer<typeof FailureRowSchema>;

const num = z.coerce.number().refine(Number.isFinite);
const RunHashSchema = z.looseObject({
  job: z.string(),
  entity: z.enum(ENTITIES as [Entity, ...Entity[]]),
  mode: z.enum(MODES as [Mode, ...Mode[]]),
  source: z.string(),
  options: z.string().transform((s, ctx) => {
    try {
      return JSON.parse(s) as Record<string, unknown>;
    } catch {
      ctx.addIssue({ code: 'custom', message: 'not JSON' });
      return z.NEVER;
    }
  }),
  status: z.enum(RUN_STATUSES),
  phase: z.string().optional(),
  createdAt: num,
  startedAt: num.optional(),
  finishedAt: num.optional(),
  error: z.string().optional(),
  alertUndelivered: z.string().optional(),
  cancelRequested: num.optional(),
  enqueueFrom: num.pipe(z.number().int().min(0)).optional(),
  writeChunk: num.pipe(z.number().int().min(1)).optional(),
});

/** Longest stored value of a failure row: a huge cell must not bloat Redis. */
const MAX_VALUE_CHARS = 1000;

/**
 * What a run id may be: letters, digits, `-` and `_` (the queue's ids are
 * `run-<UTC time>-<hex>`). Anything else is no run: an id never reaches a
 * Redis key it could step out of.
 */
export const RUN_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$/;

export function isRunId(id: string): boolean {
  return RUN_ID.test(id);
}

function newRunId(now: number): string {
  return `${now.toString(36)}-${randomBytes(4).toString('hex')}`;
}

/**
 * What became of a cancel request, with the run's status now: `taken`, or
 * refused because the run had `ended` or is `completing` (its finalize has
 * verified every write; it ends completed).
 */
export type CancelReply = { outcome: 'taken' | 'ended' | 'completing'; status: RunStatus } | null;

/** What `Runs` builds on besides its connection and keys. */
export interface RunsParts {
  /** The clock (ms since the epoch). */
  now: () => number;
  /** Refuses state of a layout this release cannot use before a run is created. */
  layout: LayoutCheck;
  /** The run history's bound, kept as runs are created. */
  retention: RunRetention;
  /** Where a failed prune of the history is told. */
  logger: Logger;
}

export class Runs {
  private readonly now: () => number;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeyLayout,
    private readonly parts: RunsParts,
  ) {
    this.now = parts.now;
  }

  /**
   * Creates a run (status `queued`) stamped with this release's layout and
   * returns its id; an existing id is left as it is. State of a layout this
   * release cannot use is refused first. Then the job's oldest ended runs
   * beyond the history are forgotten (run-retention.ts): best effort, the run
   * exists by then, and the next run of the job prunes again.
   */
  async create(init: RunInit): Promise<string> {
    await this.parts.layout.assertRead();
    const createdAt = init.createdAt ?? this.now();
    const id = init.id ?? newRunId(createdAt);
    const fields: Record<string, string> = {
      job: init.job,
      entity: init.entity,
      mode: init.mode,
      source: stripCredentials(init.source),
      options: JSON.stringify(init.options ?? {}),
      status: 'queued',
      createdAt: String(createdAt),
      [RunField.layout]: String(LAYOUT_VERSION),
    };
    const k = this.keys;
    await redisCall('creating a run', () =>
      callScript(
        this.redis,
        'create-run',
        k.run(id),
        k.runsAll(),
        k.runsOfJob(init.job),
        String(createdAt),
        id,
        ...Object.entries(fields).flat(),
      ),
    );
    try {
      await this.parts.retention.prune(init.job);
    } catch (err) {
      this.parts.logger.warn(
        { err, job: init.job, runId: id },
        'could not forget old runs; the next run of the job tries again',
      );
    }
    return id;
  }

  /**
   * The layout version of the release that started the run. A run with none
   * was created by a release before versions were stamped (or by its
   * scheduler): if it has not started yet it is stamped with this release's
   * now, and belongs to it; if it has, it belongs to layout 1.
   */
  async claimLayout(id: string): Promise<number> {
    const reply = await redisCall("reading a run's layout", () =>
      callScript(
        this.redis,
        'claim-run-layout',
        this.keys.run(id),
        RunField.layout,
        LAYOUT_VERSION,
      ),
    );
    return Number(reply);
  }

  async get(id: string): Promise<RunRecord | null> {
    if (!isRunId(id)) return null;
    const h: Record<string, string> = await redisCall('reading a run', () =>
      this.redis.hgetall(this.keys.run(id)),
    );
    return Object.keys(h).length === 0 ? null : parseRun(id, h);
  }

  /**
   * Asks a run to cancel: atomically, unless it has ended or is completing
   * (`markCompleting`). A queued run ends `cancelled` here; a run a worker
   * has is ended by its worker once its writes in flight have settled
   * (src/engine/run.ts). Null for no run.
   */
  async requestCancel(id: string): Promise<CancelReply> {
    if (!isRunId(id)) return null;
    const reply = (await redisCall('cancelling a run', () =>
      callScript(this.redis, 'cancel-run', this.keys.run(id), String(this.now())),
    )) as [number, string] | null;
    if (!reply) return null;
    const outcome = reply[0] === 1 ? 'taken' : reply[0] === 2 ? 'completing' : 'ended';
    return { outcome, status: reply[1] as RunStatus };
  }

  /**
   * The point of no return of a finalizing run: marks it `completing` unless
   * a cancel was asked for (false then: the run is to end cancelled). From
   * then on a cancel is refused and the run ends completed.
   */
  async markCompleting(id: string): Promise<boolean> {
    const reply = await redisCall('completing a run', () =>
      callScript(this.redis, 'mark-completing', this.keys.run(id), String(this.now())),
    );
    return Number(reply) === 1;
  }

  /** Runs newest first, of one job or of all. */
  async list(opts: { job?: string; limit?: number; offset?: number } = {}): Promise<RunRecord[]> {
    const limit = opts.limit ?? 20;
    const offset = opts.offset ?? 0;
    const set = opts.job === undefined ? this.keys.runsAll() : this.keys.runsOfJob(opts.job);
    const ids: string[] = await redisCall('listing runs', () =>
      this.redis.zrevrange(set, offset, offset + limit - 1),
    );
    if (ids.length === 0) return [];
    const p = this.redis.pipeline();
    for (const id of ids) p.hgetall(this.keys.run(id));
    const out = (await execAll(p, 'listing runs')) as Record<string, string>[];
    return ids.flatMap((id, n) => {
      const h = out[n]!;
      return Object.keys(h).length === 0 ? [] : [parseRun(id, h)];
    });
  }

  /** Sets fields of an existing run; an error text is scrubbed of credentials first. */
  async update(id: string, patch: RunPatch): Promise<void> {
    const fields: Record<string, string> = {};
    if (patch.status !== undefined) fields.status = patch.status;
    if (patch.phase !== undefined) fields.phase = patch.phase;
    if (patch.startedAt !== undefined) fields.startedAt = String(patch.startedAt);
    if (patch.finishedAt !== undefined) fields.finishedAt = String(patch.finishedAt);
    if (patch.enqueueFrom !== undefined) fields.enqueueFrom = String(patch.enqueueFrom);
    if (patch.writeChunk !== undefined) fields.writeChunk = String(patch.writeChunk);
    if (patch.error !== undefined) fields.error = scrubText(patch.error);
    if (patch.alertUndelivered !== undefined)
      fields.alertUndelivered = scrubText(patch.alertUndelivered);
    for (const [name, ms] of Object.entries(patch.timings ?? {}))
      fields[RunField.timing(name)] = String(ms);
    if (Object.keys(fields).length === 0) return;
    await this.mustExist(id);
    await redisCall('updating a run', () => this.redis.hset(this.keys.run(id), fields));
  }

  /** Adds to counters atomically (HINCRBY): safe from any number of workers at once. */
  async increment(id: string, deltas: Partial<RunCounts>): Promise<void> {
    const entries = Object.entries(deltas).filter(([, d]) => d !== undefined && d !== 0);
    if (entries.length === 0) return;
    const tx = this.redis.multi();
    for (const [name, d] of entries)
      tx.hincrby(this.keys.run(id), RunField.counter(name), d as number);
    await execAll(tx, 'counting a run');
  }

  /** Counts one more pause of the run by a transient fault; returns how many so far (1 the first). */
  countRetry(id: string): Promise<number> {
    return this.bump(id, RunField.retries);
  }

  /**
   * Starts another round of the run's creates, sent again after a
   * verification found them missing; returns its number (1 the first).
   */
  nextCreateRound(id: string): Promise<number> {
    return this.bump(id, RunField.round);
  }

  /**
   * Adds one to the run's `retries` or `round` field (HINCRBY, atomic) and
   * returns the new value: 1 the first time.
   */
  private async bump(
    id: string,
    field: typeof RunField.retries | typeof RunField.round,
  ): Promise<number> {
    return redisCall(`counting the run's ${field}`, () =>
      this.redis.hincrby(this.keys.run(id), field, 1),
    );
  }

  /** Appends failure rows in the order given (RPUSH keeps it). */
  async addFailures(runId: string, rows: readonly FailureRow[]): Promise<void> {
    for (const part of chunks(rows, 1000)) {
      const values = part.map((r) => JSON.stringify(storable(r)));
      await redisCall('recording failed rows', () =>
        this.redis.rpush(this.keys.failures(runId), ...values),
      );
    }
  }

  /** A page of the run's failure rows, in the order they were added. */
  async listFailures(
    runId: string,
    opts: { offset?: number; limit?: number } = {},
  ): Promise<FailureRow[]> {
    const offset = opts.offset ?? 0;
    const limit = opts.limit ?? 100;
    if (limit <= 0) return [];
    const values: string[] = await redisCall('listing failed rows', () =>
      this.redis.lrange(this.keys.failures(runId), offset, offset + limit - 1),
    );
    return values.map((v) => {
      const parsed = FailureRowSchema.safeParse(parseStored(v, `failure row of run ${runId}`));
      if (!parsed.success) {
        throw new StateError(
          'state.corrupt',
          `failure row of run ${runId} is not readable: ${parsed.error.message}`,
          false,
        );
      }
      return parsed.data as FailureRow;
    });
  }

  async countFailures(runId: string): Promise<number> {
    return redisCall('counting failed rows', () => this.redis.llen(this.keys.failures(runId)));
  }

  private async mustExist(id: string): Promise<void> {
    const exists: number = await redisCall('reading a run', () =>
      this.redis.exists(this.keys.run(id)),
    );
    if (exists === 0) throw new StateError('state.unknown-run', `no run ${id}`, false);
  }
}

/** A failure row as it is stored: its reason scrubbed of secrets, a long value cut. */
export function storable(r: FailureRow): FailureRow {
  const out: FailureRow = { line: r.line, kind: r.kind, reason: scrubText(r.reason) };
  if (r.field !== undefined) out.field = r.field;
  if (r.identity !== undefined) out.identity = r.identity;
  if (r.record !== undefined) out.record = r.record;
  if (r.survivor !== undefined) out.survivor = { line: r.survivor.line, record: r.survivor.record };
  if (r.value !== undefined) {
    out.value =
      typeof r.value === 'string' && r.value.length > MAX_VALUE_CHARS
        ? `${r.value.slice(0, MAX_VALUE_CHARS)}… (${r.value.length} characters)`
        : r.value;
  }
  return out;
}

function parseRun(id: string, h: Record<string, string>): RunRecord {
  const parsed = RunHashSchema.safeParse(h);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new StateError('state.corrupt', `run ${id} is not readable: ${problems}`, false);
  }
  const d = parsed.data;
  const counts = Object.fromEntries(
    RUN_COUNTERS.map((c) => [c, Number(h[RunField.counter(c)] ?? 0)]),
  ) as RunCounts;
  const timings: Record<string, number> = {};
  for (const [f, v] of Object.entries(h)) {
    const name = RunField.timingName(f);
    if (name !== undefined) timings[name] = Number(v);
  }
  const run: RunRecord = {
    id,
    job: d.job,
    entity: d.entity,
    mode: d.mode,
    source: d.source,
    options: d.options,
    status: d.status,
    createdAt: d.createdAt,
    counts,
    timings,
  };
  if (d.phase !== undefined) run.phase = d.phase;
  if (d.startedAt !== undefined) run.startedAt = d.startedAt;
  if (d.finishedAt !== undefined) run.finishedAt = d.finishedAt;
  if (d.error !== undefined) run.error = d.error;
  if (d.alertUndelivered !== undefined) run.alertUndelivered = d.alertUndelivered;
  if (d.cancelRequested !== undefined) run.cancelRequested = d.cancelRequested;
  if (d.enqueueFrom !== undefined) run.enqueueFrom = d.enqueueFrom;
  if (d.writeChunk !== undefined) run.writeChunk = d.writeChunk;
  return run;
}
