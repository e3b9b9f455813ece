/**
 * Starting runs: the one way a run of a job definition is asked for, by the
 * CLI (`run`, `retry`), the scheduler, the demo and the tests; an HTTP API
 * is meant to call the same functions.
 * A run is enqueued unless one of the same job is waiting or active (then it
 * is attached to), and its record is created at once, so the run can be
 * shown before a worker takes it. Everything it needs comes in `RunDeps`: no
 * process globals.
 *
 * Asking is two steps, so a caller can refuse a bad request before it starts
 * anything (the CLI's in-process workers): `prepareRun`/`prepareRetry` load
 * the job and check the request, writing nothing; `submitRun` enqueues and
 * creates the record. `startRun` and `retryRun` do both. `cancelRun` asks a
 * run to stop.
 */
import type { Config } from '../config.js';
import type { JobDefinition } from '../jobs/definition.js';
import { cachedJobLoader, type JobLoader } from '../jobs/job-loader.js';
import { enqueueRun, releaseStaleRun, type TypedQueue } from '../queue/queues.js';
import { stripCredentials } from '../state/redaction.js';
import type { RunRecord } from '../state/runs.js';
import type { StateStore } from '../state/store.js';
import type { Mode } from '../sync/action.js';
import { RunJobData as RunJobDataSchema, type RunJobData } from './payloads.js';
import { createRunRecord } from './run-record.js';
import { hasEnded } from './run-summary.js';
import { checkSourceOverride, sourceLabel } from './run-source.js';

/**
 * The job definitions of a folder (`config.jobsDir` unless another is given), with the config's
 * mappings: read again whenever a job's files change (a job file edited between runs counts).
 */
export function jobLoader(
  config: Pick<Config, 'jobsDir' | 'mappingsDir'>,
  jobsDir?: string,
): JobLoader {
  return cachedJobLoader(jobsDir ?? config.jobsDir, { mappingsDir: config.mappingsDir });
}

export interface RunDeps {
  store: StateStore;
  runQueue: TypedQueue<RunJobData>;
  loadJob: JobLoader;
}

/** What a caller may ask of a run (a retry is asked with `retryRun`). */
export interface RunRequest {
  /** Read this export (a path or URL) instead of the job's source; it must hold no credential. */
  source?: string;
  /** List the platform again and re-plan every record. */
  full?: boolean;
  /** Write even when a safety threshold trips. */
  force?: boolean;
  /** Overrides the job's mode. */
  mode?: Mode;
  /** Who asks (default `cli`); a scheduled run names its slot. */
  trigger?: 'cli' | 'schedule';
  slot?: string;
}

export interface StartedRun {
  runId: string;
  /** True when a run of the job was already waiting or active: that run's id is returned. */
  attached: boolean;
}

/** A run request checked and ready to enqueue; nothing is written yet. */
export interface PreparedRun {
  def: JobDefinition;
  /** What goes on the runs queue for the worker (stored in Redis: never a credential). */
  data: RunJobData;
}

export interface PreparedRetry extends PreparedRun {
  /** The run tried again. */
  original: RunRecord;
}

/** A run id that names no run. */
export class NoSuchRunError extends Error {
  readonly code = 'run.not-found';
  constructor(readonly runId: string) {
    super(`no run ${runId}`);
    this.name = 'NoSuchRunError';
  }
}

/** A retry asked for while the run still goes: its failed rows are not known yet. */
export class RunNotEndedError extends Error {
  readonly code = 'run.not-ended';
  constructor(run: Pick<RunRecord, 'id' | 'status'>) {
    super(`run ${run.id} is still ${run.status}; retry it once it has ended`);
    this.name = 'RunNotEndedError';
  }
}

/** A cancel asked for after the run has ended. */
export class RunEndedError extends Error {
  readonly code = 'run.ended';
  constructor(
    readonly runId: string,
    readonly status: string,
  ) {
    super(`run ${runId} has already ended (${status}); there is nothing to cancel`);
    this.name = 'RunEndedError';
  }
}

/**
 * A cancel asked for while the run is completing: its finalize has verified
 * every write and it ends `completed` (the last step, Redis only).
 */
export class RunCompletingError extends Error {
  readonly code = 'run.completing';
  constructor(readonly runId: string) {
    super(
      `run ${runId} is completing (every write has settled and been verified); it ends completed, there is nothing to cancel`,
    );
    this.name = 'RunCompletingError';
  }
}

/** A cancel taken: the run's status now (`cancelled` for a run no worker had taken yet). */
export interface CancelledRun {
  runId: string;
  status: RunRecord['status'];
}

/**
 * Cancels a run that has not ended: it sends nothing more, its writes in
 * flight settle, and it ends `cancelled` with its counts (a run no worker
 * has taken yet ends at once; otherwise its worker ends it, src/engine/run.ts;
 * a finalizing run stops its verification listing). A cancelled run can be
 * retried. `NoSuchRunError` for no run, `RunEndedError` for a run that has
 * ended, `RunCompletingError` for one past the last point a cancel can stop
 * (src/engine/finalize.ts).
 */
export async function cancelRun(
  deps: Pick<RunDeps, 'store'>,
  runId: string,
): Promise<CancelledRun> {
  const reply = await deps.store.runs.requestCancel(runId);
  if (!reply) throw new NoSuchRunError(runId);
  if (reply.outcome === 'ended') throw new RunEndedError(runId, reply.status);
  if (reply.outcome === 'completing') throw new RunCompletingError(runId);
  return { runId, status: reply.status };
}

/**
 * A run of `job`, checked: the job must load (`JobError` otherwise) and a
 * source override must hold no credential (`SourceCredentialsError`).
 */
export function prepareRun(
  deps: Pick<RunDeps, 'loadJob'>,
  job: string,
  request: RunRequest = {},
): PreparedRun {
  const def = deps.loadJob(job);
  if (request.source !== undefined) checkSourceOverride(def, request.source);
  return {
    def,
    data: {
      job,
      ...(request.source !== undefined && { source: request.source }),
      full: request.full === true,
      force: request.force === true,
      ...(request.mode !== undefined && { mode: request.mode }),
      trigger: request.trigger ?? 'cli',
      ...(request.slot !== undefined && { slot: request.slot }),
    },
  };
}

/**
 * A retry of `runId`, checked: the run must exist and have ended, its job
 * must load, and a source given instead must hold no credential.
 */
export async function prepareRetry(
  deps: Pick<RunDeps, 'store' | 'loadJob'>,
  runId: string,
  opts: { source?: string } = {},
): Promise<PreparedRetry> {
  const original = await deps.store.runs.get(runId);
  if (!original) throw new NoSuchRunError(runId);
  if (!hasEnded(original)) throw new RunNotEndedError(original);
  const def = deps.loadJob(original.job);
  if (opts.source !== undefined) checkSourceOverride(def, opts.source);
  return { def, data: retryRequest(original, def, opts.source), original };
}

/**
 * Enqueues a prepared run, or attaches to the run of the job already waiting
 * or active; a new run's record is created now (status `queued`), before a
 * worker takes it.
 */
export async function submitRun(
  deps: Pick<RunDeps, 'store' | 'runQueue'>,
  run: PreparedRun,
): Promise<StartedRun> {
  // State of a layout this release cannot use: refused before anything is enqueued.
  await deps.store.layout.assertRead();
  let { runId, attached } = await enqueueRun(deps.runQueue, run.data.job, run.data);
  if (attached) {
    // A run that has ended (a 401 fails it from a write) may still hold the
    // slot until its queue job wakes up and returns: it is no run to attach to.
    const held = await deps.store.runs.get(runId);
    if (held && hasEnded(held)) {
      await releaseStaleRun(deps.runQueue, run.data.job, runId);
      ({ runId, attached } = await enqueueRun(deps.runQueue, run.data.job, run.data));
    } else if (held) {
      // Attaching gives the caller the run going: only when it is the run they asked for.
      const full = run.data.full === true;
      const mode = run.data.mode ?? run.def.mode;
      if ((held.options.full === true) !== full || held.mode !== mode)
        throw new RunConflictError(held, { full, mode });
    }
  }
  if (!attached)
    await createRunRecord(deps.store, runId, run.def, RunJobDataSchema.parse(run.data));
  return { runId, attached };
}

/** Starts a run of `job` (or attaches to the one going). */
export async function startRun(
  deps: RunDeps,
  job: string,
  request: RunRequest = {},
): Promise<StartedRun> {
  return submitRun(deps, prepareRun(deps, job, request));
}

/**
 * Runs the job of `runId` again so that the rows it failed or had rejected
 * are tried again (or attaches to the run of that job already going). The
 * engine stores a record's state only after a confirmed write, so a new run
 * of the same job and source plans exactly those rows again, plus whatever
 * changed in the export since. Rows refused before sending (invalid,
 * conflicts) stay refused until the export is fixed.
 */
export async function retryRun(
  deps: RunDeps,
  runId: string,
  opts: { source?: string } = {},
): Promise<StartedRun & { original: RunRecord }> {
  const prepared = await prepareRetry(deps, runId, opts);
  return { ...(await submitRun(deps, prepared)), original: prepared.original };
}

/** A run asked for while another run of the job goes with another mode or `full`. */
export class RunConflictError extends Error {
  readonly code = 'run.conflict';
  constructor(
    readonly running: Pick<RunRecord, 'id' | 'job' | 'mode' | 'status' | 'options'>,
    asked: { full: boolean; mode: string },
  ) {
    const shown = (full: boolean, mode: string) =>
      `${full ? 'a full backfill' : 'a run'} (${mode})`;
    super(
      `run ${running.id} of ${running.job} is still ${running.status} as ${shown(running.options.full === true, running.mode)}; ${shown(asked.full, asked.mode)} can start once it has ended`,
    );
    this.name = 'RunConflictError';
  }
}

/** A retry whose original source cannot be read again as stored. */
export class RetrySourceError extends Error {
  readonly code = 'run.retry-source';
  constructor(runId: string, source: string) {
    super(
      `run ${runId} read ${source}, stored without its query or credentials: give the source again with --source`,
    );
    this.name = 'RetrySourceError';
  }
}

/**
 * The run request of a retry: the original's job, options and source
 * override. Run records hold sources as shown (a URL without its query or
 * credentials), so an override is recognised by comparing with the job's own
 * source shown the same way, and one that lost its query needs `source`.
 */
export function retryRequest(run: RunRecord, def: JobDefinition, source?: string): RunJobData {
  let override = source;
  if (override === undefined && run.source !== stripCredentials(sourceLabel(def, {}))) {
    if (/REDACTED|…|%E2%80%A6|^\(/.test(run.source)) throw new RetrySourceError(run.id, run.source);
    override = run.source;
  }
  return {
    job: run.job,
    ...(override !== undefined && { source: override }),
    full: run.options.full === true,
    force: run.options.force === true,
    ...(run.mode !== def.mode && { mode: run.mode }),
    trigger: 'retry',
    retryOf: run.id,
  };
}
