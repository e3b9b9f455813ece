/**
 * A run of a job definition: the processor of a `sync-runs` job, written as a
 * state machine over the run record in Redis so that a worker killed at any
 * instant leaves a run the next worker resumes (BullMQ hands the stalled job
 * over):
 *
 *   queued/planning → writing (enqueueing → waiting) → finalizing → completed
 *                   ↘ stopped (a safety threshold)      ↘ writing (creates to verify again)
 *
 * Planning restarts from the top if it was cut off (it writes nothing to the
 * platform, and its scratch is reset). Enqueueing is idempotent (one job id
 * per run and line). While writes are in flight the run job sleeps in the
 * delayed set and checks on them; it holds no worker slot.
 */
import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import { sinceText } from '../crm/since.js';
import type { JobDefinition } from '../jobs/definition.js';
import { decide } from '../platform/retry-policy.js';
import { sleep } from '../sleep.js';
import { isWrite, type WriteAction } from '../sync/action.js';
import { checkThresholds } from '../sync/thresholds.js';
import { checkPathCoverage, describeUnmatched, unmatchedPaths } from '../crm/path-coverage.js';
import type { CommitEntry } from '../state/records.js';
import type { FailureRow, RunRecord } from '../state/runs.js';
import type { StateStore } from '../state/store.js';
import type { EngineContext } from './context.js';
import { RunJobData, writeJob, type RunJobRequest } from './payloads.js';
import { planExport, type PlanCounts, type PlanningSink } from './planning.js';
import { finalize } from './finalize.js';
import { refreshIndex } from './reconcile.js';
import { failRun } from './write.js';
import { endRun } from './run-end.js';
import { pullSince, sourceOf, sourceLabel } from './run-source.js';
import { hasEnded } from './run-summary.js';

export async function processRun(ctx: EngineContext, job: Job, token?: string): Promise<string> {
  const parsed = RunJobData.safeParse(job.data);
  if (!parsed.success)
    throw new UnrecoverableError(
      `run job ${job.id} has an unreadable payload: ${parsed.error.message}`,
    );
  const req = parsed.data;
  const runId = job.id!;
  const log = ctx.logger.child({ runId, job: req.job });

  let run = await ctx.store.getRun(runId);
  let def: JobDefinition;
  try {
    def = ctx.loadJob(req.job);
  } catch (err) {
    if (!run) await createRunRecord(ctx.store, runId, undefined, req);
    await failRun(ctx, runId, (err as Error).message);
    throw new UnrecoverableError((err as Error).message);
  }
  if (!run) run = await createRunRecord(ctx.store, runId, def, req);

  try {
    for (;;) {
      switch (run.status) {
        case 'completed':
        case 'failed':
        case 'stopped':
          return run.status;
        case 'queued':
        case 'planning':
          await plan(ctx, run, def, req, log);
          break;
        case 'writing':
          if (run.phase !== 'waiting') {
            await enqueueWrites(ctx, run, def);
            await ctx.store.updateRun(runId, { phase: 'waiting' });
          }
          if (!(await writesSettled(ctx, runId))) {
            await job.moveToDelayed(Date.now() + ctx.settings.pollMs, token);
            throw new DelayedError();
          }
          await ctx.store.updateRun(runId, { status: 'finalizing', phase: 'verifying creates' });
          break;
        case 'finalizing': {
          // An incremental pull is not the whole set: what it did not read is no orphan.
          const runs = await ctx.store.listRuns({ job: def.name, limit: 50 });
          const whole = pullSince(def, req, runs) === undefined;
          await finalize(ctx, run, whole ? def : { ...def, fullSnapshot: false }, log);
          break;
        }
      }
      run = (await ctx.store.getRun(runId))!;
    }
  } catch (err) {
    if (err instanceof DelayedError) throw err;
    if (lockLost(err)) {
      // The run job is no longer ours (our lock lapsed, say while Redis was
      // down): stalled-job recovery hands the run on, and it resumes from
      // its checkpoint. It must not be failed from here.
      log.warn({ err }, 'run job lock lost; the run resumes where BullMQ hands it');
      throw err;
    }
    return onRunError(ctx, job, token, runId, err, log);
  }
}

/** BullMQ's refusal when this worker no longer holds the job's lock (its messages are its only mark). */
function lockLost(err: unknown): boolean {
  return err instanceof Error && /^(Missing lock|Lock mismatch) for job /.test(err.message);
}

/** Creates the run record (status `queued`) unless it exists; returns it. */
export async function createRunRecord(
  store: StateStore,
  runId: string,
  def: JobDefinition | undefined,
  req: RunJobRequest,
): Promise<RunRecord> {
  await store.createRun({
    id: runId,
    job: req.job,
    entity: def?.entity ?? 'companies',
    mode: req.mode ?? def?.mode ?? 'upsert',
    source: def ? sourceLabel(def, req) : (req.source ?? '(unknown)'),
    options: {
      full: req.full,
      force: req.force,
      trigger: req.trigger,
      ...(req.slot && { slot: req.slot }),
      ...(req.retryOf && { retryOf: req.retryOf }),
    },
  });
  return (await store.getRun(runId))!;
}

/**
 * What the retry policy says of a fault that reached the run: a platform
 * outage pauses the run (retried later, from its checkpoint, up to the
 * policy's count); anything else fails it with its message.
 */
async function onRunError(
  ctx: EngineContext,
  job: Job,
  token: string | undefined,
  runId: string,
  err: unknown,
  log: EngineContext['logger'],
): Promise<string> {
  const settings = ctx.settings.retry;
  let d = decide(err, { operation: 'run', durableAttempt: 1 }, settings);
  // Only a fault the run waits out counts as a pause; then the count decides.
  if (d.action === 'retry-later') {
    const pauses = await ctx.store.countRunRetry(runId);
    d = decide(err, { operation: 'run', durableAttempt: pauses }, settings);
  }
  if (d.action === 'retry-later') {
    log.warn(
      { err, waitMs: d.delayMs },
      'run paused by a transient fault; it resumes from its checkpoint',
    );
    await job.moveToDelayed(Date.now() + d.delayMs, token);
    throw new DelayedError();
  }
  const message = 'reason' in d ? d.reason : String(err);
  await failRun(ctx, runId, message);
  throw new UnrecoverableError(message);
}

// ---- planning ----------------------------------------------------------------

async function plan(
  ctx: EngineContext,
  run: RunRecord,
  def: JobDefinition,
  req: RunJobRequest,
  log: EngineContext['logger'],
): Promise<void> {
  const { store, progress } = ctx;
  const runId = run.id;
  const started = Date.now();
  if (run.status === 'planning') log.info('planning was cut off; starting it again');
  await progress.resetPlanning(runId);
  await store.updateRun(runId, {
    status: 'planning',
    phase: 'checking the platform index',
    startedAt: started,
  });

  const entity = def.entity;
  const [index, previous, pending] = await Promise.all([
    store.indexInfo(entity),
    store.listRuns({ job: def.name, limit: 50 }),
    store.listPending(entity),
  ]);
  // The change share says nothing on a job's first sync: everything is new to it.
  const firstSync = !previous.some((r) => r.status === 'completed');
  const maxAge = def.indexMaxAgeHours * 3_600_000;
  const reasons = [
    !index && 'first listing',
    req.full && '--full',
    index && Date.now() - index.refreshedAt > maxAge && 'index older than indexMaxAgeHours',
    pending.length > 0 && 'creates to verify',
  ].filter(Boolean);
  if (reasons.length > 0) {
    await store.updateRun(runId, { phase: `listing platform ${entity} (${reasons.join(', ')})` });
    await refreshIndex(ctx, entity);
    if (pending.length > 0) await resolveForeignPending(ctx, entity);
  }

  // `{{since}}` in the URL: only what changed since the last run that left nothing to retry.
  const since = pullSince(def, req, previous);
  const reading = since ? `reading the changes since ${sinceText(since)}` : 'reading the export';
  await store.updateRun(runId, { phase: reading });
  const sink = redisPlanningSink(ctx.store, runId, entity, def.name);
  let lastFlush = 0;
  // A required field whose path finds nothing in the first rows stops the run, as a threshold does.
  let pathStop: string | undefined;
  const counts = await planExport({
    entity,
    mapping: def.mapping,
    source: sourceOf(def, req, since),
    env: ctx.sourceEnv,
    mode: req.mode ?? def.mode,
    memberUpdates: def.membersUpdate === 'put',
    verifyRemote: req.full,
    sink,
    logger: ctx.logger,
    batchSize: ctx.settings.batchSize,
    onProgress: async (c) => {
      if (Date.now() - lastFlush < 250) return;
      lastFlush = Date.now();
      await progress.setCounts(runId, runCountsOf(c));
    },
    checkPaths: (coverage) => {
      // A required path that finds nothing stops the run (below); an optional one
      // is often another export shape's column (a preset reads several): `validate`
      // and `plan` warn of it, a run only notes it.
      for (const u of unmatchedPaths(coverage))
        log.info({ field: u.field, path: u.ref }, describeUnmatched(u, coverage));
      const v = checkPathCoverage(coverage);
      if (!v.ok && !req.force) pathStop = v.reason;
      return pathStop;
    },
  });
  const planned = await store.countPlannedWrites(runId);
  await progress.setCounts(runId, {
    ...runCountsOf(counts),
    writesPlanned: planned,
    writesSettled: 0,
  });
  const timings = { planning: Date.now() - started };
  log.info({ counts, writes: planned, ms: timings.planning }, 'planned');

  let verdict = checkThresholds(
    {
      read: counts.read,
      invalid: counts.invalid,
      notUtf8: counts.notUtf8,
      creates: counts.create,
      updates: counts.update,
      // An incremental pull holds only changed records: its change share says nothing either.
      firstSync: firstSync || since !== undefined,
    },
    def.thresholds,
  );
  if (pathStop !== undefined) verdict = { ok: false, reason: pathStop };
  if (!verdict.ok && !req.force) {
    await endRun(ctx, runId, {
      status: 'stopped',
      phase: 'stopped before writing',
      error: verdict.reason,
      timings,
    });
    await progress.clear(runId);
    log.warn({ reason: verdict.reason }, 'run stopped before writing');
    return;
  }
  await store.updateRun(runId, { status: 'writing', phase: 'enqueueing', timings });
}

/** The planning sink of a real run: scratch, failures and adoptions go to Redis. */
export function redisPlanningSink(
  store: StateStore,
  runId: string,
  entity: JobDefinition['entity'],
  job: string,
): PlanningSink {
  return {
    claim: (entries) => store.claimIdentities(runId, entries),
    lookup: (records) => store.lookup(entity, records, { job }),
    async accept(actions, warnings) {
      const writes: WriteAction[] = [];
      const failures: FailureRow[] = [];
      const seen: number[] = [];
      const adopted: CommitEntry[] = [];
      for (const a of actions) {
        if (isWrite(a)) writes.push(a);
        if ('platformId' in a && a.platformId !== undefined) seen.push(a.platformId);
        switch (a.kind) {
          case 'adopt':
            adopted.push({ keys: a.keys, platformId: a.platformId, hash: a.hash, runId, job });
            break;
          case 'invalid':
            failures.push({
              line: a.line,
              kind: 'invalid',
              reason: a.reason,
              ...(a.field !== undefined && { field: a.field }),
              ...(a.value !== undefined && { value: a.value }),
              ...(a.identity !== undefined && { identity: a.identity }),
            });
            break;
          case 'skip':
            // Listed when a skip rule of the mapping matched; a skip by the run's mode is not.
            if (a.rule !== undefined) {
              failures.push({
                line: a.line,
                kind: 'skipped',
                field: `skip.${a.rule}`,
                reason: a.reason,
                ...(a.value !== undefined && { value: a.value }),
                ...(a.keys[0] !== undefined && { identity: a.keys[0] }),
              });
            }
            break;
          case 'conflict':
            failures.push({
              line: a.line,
              kind: 'conflict',
              reason: a.reason,
              identity: a.identity,
            });
            break;
          case 'unsupported':
            failures.push({
              line: a.line,
              kind: 'unsupported',
              reason: a.reason,
              identity: a.keys[0]!,
            });
            break;
          case 'pending':
            failures.push({ line: a.line, kind: 'failed', reason: a.reason, identity: a.keys[0]! });
            break;
        }
      }
      if (warnings.length > 0) {
        for (const w of warnings) failures.push({ ...w, kind: 'warning' });
        // In row order, each row's warnings after its other failure (a stable sort).
        failures.sort((x, y) => x.line - y.line);
      }
      await Promise.all([
        store.savePlannedWrites(runId, writes),
        store.addFailures(runId, failures),
        store.markSeen(runId, seen),
        store.commit(entity, adopted),
      ]);
    },
    async withdraw(rows) {
      await store.dropPlannedWrites(
        runId,
        rows.filter((r) => r.was === 'create' || r.was === 'update').map((r) => r.conflict.line),
      );
      await store.addFailures(
        runId,
        rows.map((r) => ({
          line: r.conflict.line,
          kind: 'conflict' as const,
          reason: r.conflict.reason,
          identity: r.conflict.identity,
        })),
      );
    },
  };
}

/** Planning counts under the run record's counter names. */
export function runCountsOf(c: PlanCounts): Record<string, number> {
  return {
    read: c.read,
    created: 0,
    updated: 0,
    unchanged: c.unchanged,
    adopted: c.adopt,
    invalid: c.invalid,
    conflict: c.conflict,
    skipped: c.skip + c.pending,
    unsupported: c.unsupported,
    warnings: c.warnings,
    plannedCreates: c.create,
    plannedUpdates: c.update,
  };
}

// ---- writing -------------------------------------------------------------------

/** Enqueues the planned writes, a page at a time, keeping the waiting writes under a bound. */
async function enqueueWrites(
  ctx: EngineContext,
  run: RunRecord,
  def: JobDefinition,
  round = 0,
): Promise<void> {
  let cursor = '0';
  do {
    while ((await ctx.writeQueue.getWaitingCount()) > ctx.settings.maxWaitingWrites) {
      await sleep(ctx.settings.pollMs);
    }
    const page = await ctx.store.scanPlannedWrites(run.id, cursor, 500);
    cursor = page.cursor;
    if (page.writes.length > 0) {
      await ctx.writeQueue.addBulk(page.writes.map((a) => writeJob(run, def, a, round)));
    }
  } while (cursor !== '0');
}

async function writesSettled(ctx: EngineContext, runId: string): Promise<boolean> {
  const run = await ctx.store.getRun(runId);
  if (!run) return false;
  return run.counts.writesSettled >= run.counts.writesPlanned;
}

/**
 * Pending creates left by runs that ended without verifying them (a crash
 * before their finalize), after a fresh listing: their marks are cleared, and
 * this run's plan finds the records that landed in the index like any record
 * we did not create (adopted when equal, updated with a diff when not) and
 * creates the missing ones. Recording found ones in state here instead would
 * make the index look older than that "write" and hide the platform's values:
 * each would get a needless PUT. The marks of a run still going (another job
 * on the same entity) are left to its own finalize: its create may land after
 * this listing, and creating the record here too would make a duplicate.
 */
async function resolveForeignPending(
  ctx: EngineContext,
  entity: JobDefinition['entity'],
): Promise<void> {
  const pending = await ctx.store.listPending(entity);
  const live = new Set<string>();
  for (const id of new Set(pending.map((p) => p.runId))) {
    const owner = await ctx.store.getRun(id);
    if (owner && !hasEnded(owner)) live.add(id);
  }
  await ctx.store.clearPending(
    entity,
    pending.filter((p) => !live.has(p.runId)).map((p) => p.key),
  );
}
