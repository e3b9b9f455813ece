/**
 * The processor of a `platform-writes` job: a chunk of a run's planned
 * writes. BullMQ's own bookkeeping (about 40 Redis commands a job) is paid
 * once per chunk; inside it the writes go out concurrently, as many at once
 * as the process's write slots allow and each paced like any platform
 * request, and every write is still claimed and settled on its own
 * (write.ts): a chunk taken over from a dead worker, or attempted again,
 * skips the lines already settled and finds the creates left pending.
 *
 * Writes that ended are settled in batches: whatever ended while the last
 * batch was in Redis goes in the next one, in one script (`writes.finish`).
 * A write left to a next attempt (a transient fault past the in-process
 * retries) makes the chunk job throw once every other write of the chunk
 * has ended, and BullMQ tries the chunk again after the policy's backoff;
 * only its unsettled lines are sent then.
 */
import { setMaxListeners } from 'node:events';
import type { Job } from 'bullmq';
import { UnrecoverableError } from 'bullmq';
import type { ClaimRequest, FinishedWrite, WriteClaim } from '../state/write-steps.js';
import { Batcher } from './batcher.js';
import type { WriteAction } from '../sync/action.js';
import type { EngineContext } from './context.js';
import { WriteChunkData, type WriteChunk } from './payloads.js';
import { runWrite, type ChunkScope, type WriteResult } from './write.js';

/** How many writes of a chunk ended in each way. */
export type ChunkResult = Partial<Record<WriteResult, number>>;

export async function processWriteChunk(
  ctx: EngineContext,
  job: Job,
  signal?: AbortSignal,
  token?: string,
): Promise<ChunkResult> {
  const chunk = parseChunk(job);
  // Every write in flight listens to the chunk's abort.
  if (signal) setMaxListeners(0, signal);
  const run = await ctx.store.runs.get(chunk.runId);
  const result: ChunkResult = {};
  const count = (r: WriteResult): void => {
    result[r] = (result[r] ?? 0) + 1;
  };
  // A run that failed (401), was cancelled or is gone takes no more writes. A cancel
  // asked for later is seen by each write's claim (src/state/write-steps.ts).
  if (
    !run ||
    run.status === 'failed' ||
    run.status === 'completed' ||
    run.status === 'cancelled' ||
    run.cancelRequested !== undefined
  ) {
    result.skipped = chunk.lines.length;
    return result;
  }
  const located = await ctx.store.plannedWrites.located(chunk.runId, chunk.lines);
  const actions = located.map((l) => l.write);
  // Each write names its plan chunk when it settles: the chunk is dropped once all its lines have.
  const planChunk = new Map(located.map((l) => [l.write.line, l.chunk]));
  const runBatches = batchesOf(ctx, chunk);
  let stopped: string | undefined;
  const lock = new ChunkLock(ctx, job, token);
  const scope: ChunkScope = {
    job,
    runId: chunk.runId,
    entity: chunk.entity,
    createVia: chunk.createVia,
    jobName: run.job,
    holdsLock: () => lock.holds(),
    ...(signal && { signal }),
    claim: (c) => runBatches.claim.add(c),
    finish: (w) => {
      const c = planChunk.get(w.line);
      return runBatches.finish.add(c === undefined ? w : { ...w, planChunk: c });
    },
    stop: (why) => {
      stopped ??= why;
    },
  };
  await settleUnplanned(chunk, actions, runBatches.finish, count);

  const retries: unknown[] = [];
  const failures: unknown[] = [];
  const inFlight = new Set<Promise<void>>();
  for (const a of actions) {
    const release = ctx.writeSlots ? await ctx.writeSlots.take() : () => undefined;
    if (stopped !== undefined || signal?.aborted) {
      release();
      break;
    }
    const p: Promise<void> = runWrite(ctx, scope, a)
      .then((end) => {
        if ('retry' in end) retries.push(end.retry);
        else count(end.result);
      })
      .catch((err: unknown) => {
        failures.push(err);
        scope.stop('a write failed');
      })
      .finally(() => {
        release();
        inFlight.delete(p);
      });
    inFlight.add(p);
    // Without shared slots, one write at a time.
    if (!ctx.writeSlots) await p;
  }
  // Each write has settled (or failed to) when its promise is done.
  await Promise.all(inFlight);
  // Anything but a platform answer (Redis down, a bug): the chunk's next attempt.
  if (failures.length > 0) throw failures[0];
  if (retries.length > 0) throw retries[0];
  // A shutdown: the writes not begun are the chunk's next attempt's, which BullMQ
  // hands to a worker once this one has gone (the job must not complete).
  if (signal?.aborted) throw signal.reason ?? new Error('write chunk aborted');
  if (stopped !== undefined) ctx.logger.info({ runId: chunk.runId, jobId: job.id }, stopped);
  return result;
}

function parseChunk(job: Job): WriteChunk {
  const parsed = WriteChunkData.safeParse(job.data);
  if (!parsed.success) {
    throw new UnrecoverableError(
      `write job ${job.id} has an unreadable payload: ${parsed.error.message}`,
    );
  }
  return parsed.data;
}

/**
 * Lines the run's plan has no write for: settled already, their plan chunk
 * dropped with its last line (a chunk attempted again, or enqueued again:
 * the finish script answers "settled before", and nothing is counted or
 * recorded), or the scratch expired: failed then, so the run does not wait.
 */
async function settleUnplanned(
  chunk: WriteChunk,
  actions: readonly WriteAction[],
  finish: Batcher<FinishedWrite, boolean>,
  count: (r: WriteResult) => void,
): Promise<void> {
  const planned = new Set(actions.map((a) => a.line));
  const missing = chunk.lines.filter((l) => !planned.has(l));
  await Promise.all(
    missing.map(async (line) => {
      const first = await finish.add({
        line,
        outcome: 'failed',
        keys: [],
        clearPending: false,
        failure: {
          line,
          kind: 'failed',
          reason: 'the planned write is no longer in the run (its plan expired); run again',
          identity: `line ${line}`,
        },
      });
      count(first ? 'failed' : 'skipped');
    }),
  );
}

/**
 * The chunk job's lock as the creates of the chunk see it. It is checked and
 * renewed before a create unless a renewal that began less than a tenth of
 * its duration ago succeeded: the lock then has nine tenths left, and a
 * worker starved past it is stopped by the check at its first create after
 * waking. Creates that need a check while one is on its way wait for it.
 */
class ChunkLock {
  private renewedAt = Number.NEGATIVE_INFINITY;
  private checking: Promise<boolean> | undefined;

  constructor(
    private readonly ctx: EngineContext,
    private readonly job: Job,
    private readonly token: string | undefined,
  ) {}

  async holds(): Promise<boolean> {
    const { token, ctx } = this;
    if (token === undefined) return true;
    if (Date.now() - this.renewedAt < ctx.settings.lockMs / 10) return true;
    this.checking ??= (async () => {
      const at = Date.now();
      try {
        const key = `${this.job.queueQualifiedName}:${this.job.id}:lock`;
        const held = await ctx.store.writes.renewLock(key, token, ctx.settings.lockMs);
        if (held) this.renewedAt = at;
        return held;
      } finally {
        this.checking = undefined;
      }
    })();
    return this.checking;
  }
}

/** The batches of one run's writes in this process: every chunk of the run shares them. */
interface RunBatches {
  claim: Batcher<ClaimItem, WriteClaim>;
  finish: Batcher<FinishedWrite, boolean>;
}

type ClaimItem = Omit<ClaimRequest, 'runId' | 'entity'>;

/**
 * How long the first claim or settle of a batch waits for others: paced
 * writes end one at a time (one a millisecond at 1,000/s), and every script
 * call costs the worker a socket write; a few milliseconds on each write
 * cost nothing while the write slots cover rate × latency.
 */
const BATCH_WAIT_MS = 5;

const batches = new WeakMap<EngineContext, Map<string, RunBatches>>();

/**
 * The process's batches of the chunk's run and entity: the claims that
 * arrive while one batch is in Redis go in the next (one script, the run
 * read once), and so do the writes that end (one script: committed and
 * settled). The last write of a round to settle wakes its run. Batches
 * with nothing left to do are forgotten.
 */
function batchesOf(ctx: EngineContext, chunk: WriteChunk): RunBatches {
  let byRun = batches.get(ctx);
  if (!byRun) batches.set(ctx, (byRun = new Map()));
  const key = `${chunk.entity} ${chunk.runId}`;
  const known = byRun.get(key);
  if (known) return known;
  const { runId, entity } = chunk;
  const idle = (): void => {
    if (!made.claim.busy && !made.finish.busy) byRun.delete(key);
  };
  const made: RunBatches = {
    claim: new Batcher(
      (items) => ctx.store.writes.claimAll(runId, entity, items),
      200,
      BATCH_WAIT_MS,
      idle,
    ),
    finish: new Batcher(
      async (writes) => {
        const reply = await ctx.store.writes.finish(runId, entity, writes);
        if (reply.first.some(Boolean) && reply.settled >= reply.planned) {
          // The run also checks on its writes by itself: a wake-up that fails only delays it.
          await ctx.wakeRun?.(runId).catch((err: unknown) => {
            ctx.logger.warn({ err, runId }, 'could not wake the run');
          });
        }
        return reply.first;
      },
      200,
      BATCH_WAIT_MS,
      idle,
    ),
  };
  byRun.set(key, made);
  return made;
}
/**
 * A chunk job BullMQ gave up on (its last attempt threw something that is
 * not a platform answer, or its payload was unreadable): its lines not
 * settled yet are settled as failed, so that its run does not wait for them
 * forever. A create left pending stays pending: the run's finalize verifies it.
 */
export async function settleAbandoned(ctx: EngineContext, job: Job, err: Error): Promise<void> {
  const parsed = WriteChunkData.safeParse(job.data);
  if (!parsed.success) return;
  const chunk = parsed.data;
  const open = await ctx.store.progress.unsettledOf(chunk.runId, chunk.lines);
  // Settled without their plan chunks named: a create may leave pending marks that finalize
  // verifies by the plan, so those chunks are kept to the run's end.
  const actions = await ctx.store.plannedWrites.of(chunk.runId, open);
  if (actions.length === 0) return;
  const reason = `write abandoned after ${job.attemptsMade} attempts: ${err.message}`;
  const reply = await ctx.store.writes.finish(
    chunk.runId,
    chunk.entity,
    actions.map((a) => ({
      line: a.line,
      outcome: 'failed' as const,
      keys: a.keys,
      clearPending: false,
      failure: { line: a.line, kind: 'failed' as const, reason, identity: a.keys[0]! },
    })),
  );
  if (reply.first.some(Boolean) && reply.settled >= reply.planned) {
    await ctx.wakeRun?.(chunk.runId);
  }
}
