/**
 * A run as its callers see it: the summary every command, the demo and the
 * coming HTTP API show (the `show --json` shape, docs/CLI.md), whether a run
 * has ended, and waiting for its end by reading its record.
 */
import { sleep } from '../sleep.js';
import type { RunRecord, Runs } from '../state/runs.js';

/** The run as `show --json` prints it: a stable shape that scripts rely on (docs/CLI.md). */
export interface RunSummary {
  runId: string;
  job: string;
  status: string;
  phase?: string;
  error?: string;
  /** The alert of the run's end was given up after its last delivery attempt: why. */
  alertUndelivered?: string;
  source: string;
  mode: string;
  counts: {
    read: number;
    created: number;
    updated: number;
    unchanged: number;
    adopted: number;
    invalid: number;
    conflict: number;
    /** Rows another row of the export claiming the same record survived: `failures RUN --kind duplicate`. */
    duplicates: number;
    rejected: number;
    failed: number;
    skipped: number;
    unsupported: number;
    /** Optional fields left out of rows that were synced (one per field), rows read as windows-1252: `failures RUN --kind warning`. */
    warnings: number;
    orphans: number;
    writesPlanned: number;
    writesSettled: number;
    /** 429s the platform answered this run's writes. */
    rateLimited: number;
  };
  createdAt: string;
  startedAt?: string;
  finishedAt?: string;
  durationMs?: number;
}

/** The summary of a run record. Keys come in a fixed order: scripts may compare the text. */
export function runSummary(run: RunRecord): RunSummary {
  const c = run.counts;
  const iso = (ms: number | undefined) =>
    ms === undefined ? undefined : new Date(ms).toISOString();
  return {
    runId: run.id,
    job: run.job,
    status: run.status,
    ...(run.phase !== undefined && { phase: run.phase }),
    ...(run.error !== undefined && { error: run.error }),
    ...(run.alertUndelivered !== undefined && { alertUndelivered: run.alertUndelivered }),
    source: run.source,
    mode: run.mode,
    counts: {
      read: c.read,
      created: c.created,
      updated: c.updated,
      unchanged: c.unchanged,
      adopted: c.adopted,
      invalid: c.invalid,
      conflict: c.conflict,
      duplicates: c.duplicates,
      rejected: c.rejected,
      failed: c.failed,
      skipped: c.skipped,
      unsupported: c.unsupported,
      warnings: c.warnings,
      orphans: c.orphans,
      writesPlanned: c.writesPlanned,
      writesSettled: c.writesSettled,
      rateLimited: c.rateLimited,
    },
    createdAt: iso(run.createdAt)!,
    ...(run.startedAt !== undefined && { startedAt: iso(run.startedAt) }),
    ...(run.finishedAt !== undefined && { finishedAt: iso(run.finishedAt) }),
    ...(run.finishedAt !== undefined && {
      durationMs: run.finishedAt - (run.startedAt ?? run.createdAt),
    }),
  };
}

/** The statuses after which a run changes no more. */
export const ENDED_STATUSES: ReadonlySet<string> = new Set([
  'completed',
  'failed',
  'stopped',
  'cancelled',
]);

export function hasEnded(run: Pick<RunRecord, 'status'>): boolean {
  return ENDED_STATUSES.has(run.status);
}

/** A run that had not ended when its caller stopped waiting. */
export class RunWaitTimeoutError extends Error {
  readonly code = 'run.wait-timeout';
  constructor(
    readonly runId: string,
    readonly last: RunRecord,
    timeoutMs: number,
  ) {
    super(
      `run ${runId} still ${last.status} (${last.phase ?? ''}) after ${timeoutMs} ms: ${JSON.stringify(last.counts)}`,
    );
    this.name = 'RunWaitTimeoutError';
  }
}

export interface WaitOptions {
  /** How often the record is read (default 300 ms). */
  pollMs?: number;
  /** Give up after this long with a `RunWaitTimeoutError` (default: wait as long as it takes). */
  timeoutMs?: number;
  /** Called with the record at each read while the run goes (a progress bar, a test's probe). */
  onPoll?: (run: RunRecord) => void | Promise<void>;
  /**
   * The wait between reads: up to `ms`, ending early when the run may have
   * ended (its job's end, src/queue/run-end-watch.ts). A plain sleep when not given.
   */
  wake?: (ms: number) => Promise<void>;
}

/**
 * The record of `runId` once the run has ended, or null when there is no such
 * run. A read that finds nothing later keeps the last record seen: the run
 * was there, and only its end is awaited.
 */
export async function waitForRun(
  store: { runs: Pick<Runs, 'get'> },
  runId: string,
  opts: WaitOptions = {},
): Promise<RunRecord | null> {
  const pollMs = opts.pollMs ?? 300;
  const deadline = opts.timeoutMs === undefined ? Infinity : Date.now() + opts.timeoutMs;
  let run = await store.runs.get(runId);
  if (!run) return null;
  while (!hasEnded(run)) {
    await opts.onPoll?.(run);
    if (Date.now() > deadline) throw new RunWaitTimeoutError(runId, run, opts.timeoutMs!);
    await (opts.wake ?? sleep)(pollMs);
    run = (await store.runs.get(runId)) ?? run;
  }
  return run;
}
