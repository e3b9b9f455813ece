/**
 * A run of a job definition: the processor of a `sync-runs` job, written as a
 * state machine over the run record in Redis so that a worker killed at any
 * instant leaves a run the next worker resumes (BullMQ hands the stalled job
 * over):
 *
 *   queued/planning → writing (enqueueing → waiting) → finalizing → completed
 *                   ↘ stopped (a safety threshold)      ↘ writing (creates to verify again)
 *   any status before completed → cancelled (asked for: `cancelRun` in run-service.ts)
 *
 * A cancel is a mark on the run record. Planning stops at its next progress
 * report; finalize stops its verification listing (finalize.ts); each
 * write's claim refuses to send once the mark is there (one atomic script: a
 * write either went before the cancel or never goes); and the run job, at
 * its next step, removes the run's write chunks still waiting in the queue,
 * waits until no write chunk of the run is active (the writes in flight have
 * settled), then ends the run `cancelled` with its counts as they stand.
 * What was not written is planned again by a retry: the engine records a
 * record's state only after a confirmed write.
 *
 * Planning restarts from the top if it was cut off (it writes nothing to the
 * platform, and its scratch is reset). Enqueueing is idempotent (a chunk's
 * job id names its lines; each write settles once per line) and goes on from
 * the line the run record keeps. While the run's queued writes are at their
 * bound, and while writes are in flight, the run job sleeps in the delayed
 * set and checks on them; it holds no worker slot.
 *
 * The planning phase is in run-planning.ts; the writes themselves are the
 * `platform-writes` processor in write-chunk.ts (chunks of planned writes).
 */
import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import type { JobDefinition } from '../jobs/definition.js';
import { scrubText } from '../log.js';
import { decide } from '../platform/retry-policy.js';
import { removeWaitingJobs } from '../queue/queues.js';
import { addInTurn, writesWaiting } from '../queue/fair-share-store.js';
import type { KnownLimit } from '../queue/pacer.js';
import type { RunRecord } from '../state/runs.js';
import type { EngineContext } from './context.js';
import { isWriteChunkOf, RunJobData, shareOf, writeChunksOfPage } from './payloads.js';
import { planRun } from './run-planning.js';
import { RunCancelledError } from './run-cancel.js';
import { finalize } from './finalize.js';
import { failRun } from './write.js';
import { leaveRunOfOtherLayout } from './run-layout.js';
import { checkSourceOverride, pullSince } from './run-source.js';
import { endRun } from './run-end.js';
import { hasEnded } from './run-summary.js';
import { createRunRecord } from './run-record.js';
import { chunkLines, ENQUEUE_PAGE, limitNow, waitingBound } from './write-sizing.js';

export async function processRun(ctx: EngineContext, job: Job, token?: string): Promise<string> {
  const parsed = RunJobData.safeParse(job.data);
  if (!parsed.success)
    throw new UnrecoverableError(
      `run job ${job.id} has an unreadable payload: ${parsed.error.message}`,
    );
  const req = parsed.data;
  const runId = job.id!;
  const log = ctx.logger.child({ runId, job: req.job });
  /** Puts the run job in the delayed set for a poll interval: it holds no worker slot meanwhile. */
  const sleepAPoll = async (): Promise<never> => {
    await job.moveToDelayed(Date.now() + ctx.settings.pollMs, token);
    throw new DelayedError();
  };

  let run = await ctx.store.runs.get(runId);
  if (!run && job.attemptsStarted > 1) {
    // This job has started before, and its first start found or made the
    // record (its producer makes it too): the run has ended and the history
    // has forgotten it since (a run failed from a write keeps its job asleep
    // in the delayed set until it wakes here). Planning it again from scratch
    // would be a run nobody asked for.
    log.warn('run record gone (an ended run the history forgot); nothing to do');
    return 'forgotten';
  }
  let def: JobDefinition;
  try {
    def = ctx.loadJob(req.job);
    // The queue's data is checked as any request is: it may not have come through our producers.
    if (req.source !== undefined) checkSourceOverride(def, req.source);
  } catch (err) {
    if (!run) await createRunRecord(ctx.store, runId, undefined, req);
    await failRun(ctx, runId, (err as Error).message);
    // BullMQ keeps the message and stack in Redis (the job's failedReason).
    throw new UnrecoverableError(scrubText((err as Error).message));
  }
  if (!run) run = await createRunRecord(ctx.store, runId, def, req);
  if (await leaveRunOfOtherLayout(ctx, job, token, run)) throw new DelayedError();

  try {
    for (;;) {
      if (run.cancelRequested !== undefined && !hasEnded(run))
        return await endCancelled(ctx, job, token, runId, log);
      switch (run.status) {
        case 'completed':
        case 'failed':
        case 'stopped':
        case 'cancelled':
          return run.status;
        case 'queued':
        case 'planning':
          await planRun(ctx, run, def, req, log);
          break;
        case 'writing':
          if (run.phase !== 'waiting') {
            // Its queued writes at their bound, the run sleeps as it does waiting for them to settle.
            if (!(await enqueueWrites(ctx, run, def))) await sleepAPoll();
            await ctx.store.runs.update(runId, { phase: 'waiting' });
          }
          if (!(await writesSettled(ctx, runId))) await sleepAPoll();
          await ctx.store.runs.update(runId, { status: 'finalizing', phase: 'verifying creates' });
          break;
        case 'finalizing': {
          // An incremental pull is not the whole set: what it did not read is no orphan.
          const runs = await ctx.store.runs.list({ job: def.name, limit: 50 });
          const whole = pullSince(def, req, runs) === undefined;
          await finalize(ctx, run, whole ? def : { ...def, fullSnapshot: false }, log);
          break;
        }
      }
      run = (await ctx.store.runs.get(runId))!;
    }
  } catch (err) {
    if (err instanceof DelayedError) throw err;
    if (err instanceof RunCancelledError) return endCancelled(ctx, job, token, runId, log);
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

/**
 * A run asked to cancel: its write chunks still waiting in the queue (or
 * delayed for another attempt) are removed; once no write chunk of it is
 * active (every write claimed before the cancel has settled; a chunk taken
 * meanwhile sees the mark and sends nothing), it ends `cancelled` with its
 * counts as they stand. Until then the run job sleeps in the delayed set, as
 * it does for its writes.
 */
async function endCancelled(
  ctx: EngineContext,
  job: Job,
  token: string | undefined,
  runId: string,
  log: EngineContext['logger'],
): Promise<string> {
  const removed = await removeWaitingJobs(ctx.writeQueue, (id) => isWriteChunkOf(id, runId));
  if (removed > 0)
    log.info({ removed }, 'write chunks of the cancelled run removed from the queue');
  const active = await ctx.writeQueue.getActive();
  if (active.some((j) => (j.data as { runId?: unknown } | undefined)?.runId === runId)) {
    await job.moveToDelayed(Date.now() + ctx.settings.pollMs, token);
    throw new DelayedError();
  }
  const run = await ctx.store.runs.get(runId);
  if (run && hasEnded(run)) return run.status;
  // Creates whose outcome is unknown count in no outcome: the phase says how many the next run verifies.
  const unverified = await ctx.store.progress.unverifiedCreates(runId);
  await endRun(ctx, runId, {
    status: 'cancelled',
    phase:
      `cancelled while ${run?.status ?? 'going'}` +
      (unverified > 0
        ? `; ${unverified} create(s) of unknown outcome, verified by the next run`
        : ''),
  });
  await ctx.store.progress.clear(runId);
  log.info('run cancelled; its writes in flight have settled');
  return 'cancelled';
}

/** BullMQ's refusal when this worker no longer holds the job's lock (its messages are its only mark). */
function lockLost(err: unknown): boolean {
  return err instanceof Error && /^(Missing lock|Lock mismatch) for job /.test(err.message);
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
    const pauses = await ctx.store.runs.countRetry(runId);
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
  // BullMQ keeps the message and stack in Redis (the job's failedReason).
  throw new UnrecoverableError(scrubText(message));
}

// ---- writing -------------------------------------------------------------------

/**
 * Enqueues the planned writes in chunk jobs of up to the run's `writeChunk` lines, cut
 * within each plan chunk (only the lines travel; the bodies stay in the
 * run's plan), a page at a time from the run's `enqueueFrom`, each chunk in
 * the run's turn among the runs writing (src/queue/fair-share.ts). Once more
 * of the run's own writes wait in the queue than `waitingBound` allows
 * (`maxWaitingWrites` once the limit is known), it keeps the line it got to
 * and returns false: the caller puts the run to sleep and it goes on from
 * there. True once every write is enqueued (or the run is cancelled: the
 * chunks not enqueued yet would only be skipped).
 */
async function enqueueWrites(
  ctx: EngineContext,
  run: RunRecord,
  def: JobDefinition,
): Promise<boolean> {
  const limit = await limitNow(ctx);
  const share = shareOf(await resized(ctx, run, limit), def, ctx.settings.writeChunk);
  const bound = waitingBound(ctx.settings, limit);
  let cursor = String(run.enqueueFrom ?? 0);
  do {
    if ((await writesWaiting(ctx.writeQueue, share)) > bound) {
      const from = Number(cursor);
      if (from !== (run.enqueueFrom ?? 0))
        await ctx.store.runs.update(run.id, { enqueueFrom: from });
      return false;
    }
    if ((await ctx.store.runs.get(run.id))?.cancelRequested !== undefined) return true;
    const page = await ctx.store.plannedWrites.scan(run.id, cursor, ENQUEUE_PAGE);
    cursor = page.cursor;
    await addInTurn(ctx.writeQueue, share, writeChunksOfPage(run, def, page, share.chunkSize));
  } while (cursor !== '0');
  return true;
}

/**
 * A run that goes on enqueueing after its waiting writes held it cuts the
 * rest by the limit known now (`chunkLines`): a backfill planned before
 * `auto` learned the platform's limit started with chunks of a quarter
 * second at PLATFORM_RATE_LIMIT_MAX. Its chunks in the queue keep their
 * lines. A page enqueued by an attempt cut off before it saved
 * `enqueueFrom` is cut again in the new size: the overlap is harmless
 * (`writeChunks`).
 */
async function resized(ctx: EngineContext, run: RunRecord, limit: KnownLimit): Promise<RunRecord> {
  if (!run.enqueueFrom) return run;
  const writeChunk = chunkLines(ctx.settings, limit);
  if (writeChunk === run.writeChunk) return run;
  await ctx.store.runs.update(run.id, { writeChunk });
  return { ...run, writeChunk };
}

async function writesSettled(ctx: EngineContext, runId: string): Promise<boolean> {
  const run = await ctx.store.runs.get(runId);
  if (!run) return false;
  return run.counts.writesSettled >= run.counts.writesPlanned;
}
