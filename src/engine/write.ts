/**
 * One platform write: the processor of a `platform-writes` job.
 *
 * Creates are not idempotent, so a create is marked pending in Redis before
 * it is sent and the mark is cleared only when the outcome is known. A create
 * whose outcome is unknown (timeout, connection cut after sending, 5xx, or a
 * worker killed mid-request) stays pending and is never sent again blindly:
 * the run's finalize step lists the platform and adopts or re-creates it.
 *
 * What a fault leads to is the retry policy's decision (src/platform/retry-policy.ts),
 * asked in-process by `withRetry` and once more here when the request gave
 * up: a 429 pauses the whole queue and hands the job back; a 401 fails the
 * run at once; a create that may have applied is left pending; a final
 * refusal is recorded as rejected; a transient fault goes to BullMQ's next
 * attempt, and past the last one the write is recorded as failed.
 */
import type { Job } from 'bullmq';
import { UnrecoverableError } from 'bullmq';
import { PlatformError, RateLimitedError } from '../platform/errors.js';
import { withRetry } from '../platform/with-retry.js';
import { decide, jitterOf, type Decision } from '../platform/retry-policy.js';
import type { CallOptions } from '../platform/client.js';
import type { CompanyRequest, MemberRequest } from '../platform/schemas.js';
import { pauseQueue, rateLimitedStarts, RateLimitRetriesExhaustedError } from '../queue/limiter.js';
import type { FailureRow } from '../state/runs.js';
import type { EngineContext } from './context.js';
import { WriteJobData, type WriteJob } from './payloads.js';
import type { WriteOutcome } from '../state/progress.js';
import { endRun } from './run-end.js';

/** What became of one write job. */
export type WriteResult = WriteOutcome | 'skipped';

export async function processWrite(
  ctx: EngineContext,
  job: Job,
  signal?: AbortSignal,
  token?: string,
): Promise<WriteResult> {
  const parsed = WriteJobData.safeParse(job.data);
  if (!parsed.success) {
    throw new UnrecoverableError(
      `write job ${job.id} has an unreadable payload: ${parsed.error.message}`,
    );
  }
  const w = parsed.data;
  const operation = operationOf(w);
  const run = await ctx.store.getRun(w.runId);
  // A run that failed (401) or is gone takes no more writes; nor does a write already settled.
  if (!run || run.status === 'failed' || run.status === 'completed') return 'skipped';
  if (await ctx.progress.isSettled(w.runId, w.line)) return 'skipped';

  try {
    const call = signal ? { signal } : {};
    const result =
      w.kind === 'create'
        ? await create(ctx, job, w, run.job, call, token)
        : await update(ctx, job, w, run.job, call);
    ctx.metrics?.writes.inc({ operation, status: 'ok' });
    return result;
  } catch (err) {
    if (err instanceof PlatformError) {
      ctx.metrics?.writes.inc({ operation, status: String(err.statusCode ?? err.code) });
      if (err instanceof RateLimitedError) ctx.metrics?.rateLimited.inc({ operation });
    }
    return await onError(ctx, job, w, err);
  }
}

/** The route template of a write, for metrics labels. */
function operationOf(w: WriteJob): string {
  if (w.kind === 'update') return `PUT /${w.entity}/{id}`;
  return w.entity === 'companies' && w.createVia === 'customers'
    ? 'POST /customers'
    : `POST /${w.entity}`;
}

async function create(
  ctx: EngineContext,
  job: Job,
  w: WriteJob,
  jobName: string,
  call: CallOptions,
  token: string | undefined,
): Promise<WriteResult> {
  const { store } = ctx;
  // A worker starved past its lock (CPU, GC) wakes up after BullMQ handed the
  // job to another worker, which may have sent this create already: send only
  // while this attempt still holds the lock, renewed here so that the request
  // goes out well within it.
  if (token !== undefined && (await job.extendLock(token, ctx.settings.lockMs)) !== 1) {
    ctx.logger.warn({ runId: w.runId, line: w.line }, 'write lock lost; another worker has it');
    return 'skipped';
  }
  // Atomic: an earlier attempt (this job's, or another worker's that held it)
  // left the create pending (outcome unknown: only listing can tell) or
  // recorded it (it succeeded, but the job was not marked done).
  const claim = await store.claimCreate(w.entity, w.keys, w.runId, Date.now());
  if (claim === 'pending') return settle(ctx, w, 'pending');
  if (claim === 'exists') {
    const [known] = await store.lookup(w.entity, [{ keys: w.keys }]);
    if (known?.storedHash === w.hash) return settle(ctx, w, 'created');
    return settle(ctx, w, 'failed', {
      line: w.line,
      kind: 'failed',
      reason: 'the record was created meanwhile by another run; the next run updates it',
      identity: w.keys[0]!,
    });
  }
  const record = await withRetry(
    () =>
      w.entity === 'members'
        ? ctx.client.createMember(w.body as MemberRequest, call)
        : w.createVia === 'customers'
          ? ctx.client.createCustomer(w.body as CompanyRequest, call)
          : ctx.client.createCompany(w.body as CompanyRequest, call),
    { operation: 'create', settings: ctx.settings.retry, ...call },
  );
  const id = record.id;
  if (typeof id !== 'number') {
    // Created, but we cannot tell which record it is: leave it pending for listing.
    ctx.logger.warn(
      { runId: w.runId, line: w.line },
      'create answered without an id; verifying by listing',
    );
    return settle(ctx, w, 'pending');
  }
  await store.commit(w.entity, [
    { keys: w.keys, platformId: id, hash: w.hash, runId: w.runId, job: jobName },
  ]);
  return settle(ctx, w, 'created');
}

async function update(
  ctx: EngineContext,
  job: Job,
  w: WriteJob,
  jobName: string,
  call: CallOptions,
): Promise<WriteResult> {
  const id = w.platformId;
  if (id === undefined) throw new UnrecoverableError(`update job ${job.id} has no platform id`);
  await withRetry(
    () =>
      w.entity === 'members'
        ? ctx.client.updateMember(id, w.body as MemberRequest, call)
        : ctx.client.updateCompany(id, w.body as CompanyRequest, call),
    { operation: 'update', settings: ctx.settings.retry, ...call },
  );
  await ctx.store.commit(w.entity, [
    { keys: w.keys, platformId: id, hash: w.hash, runId: w.runId, job: jobName },
  ]);
  return settle(ctx, w, 'updated');
}

/** What the retry policy says of a write the in-process layer gave up on. */
function decideWrite(ctx: EngineContext, job: Job, w: WriteJob, err: unknown): Decision {
  const attempt = job.attemptsMade + 1;
  return decide(
    err,
    {
      operation: w.kind,
      durableAttempt: attempt,
      durableAttempts: job.opts.attempts ?? 1,
      rateLimited: rateLimitedStarts(job),
      ...(w.platformId !== undefined && { platformId: w.platformId }),
      // The same draw as the queue's backoff strategy makes for this job and attempt.
      random: jitterOf(`${job.id ?? ''}:${attempt}`),
    },
    ctx.settings.retry,
  );
}

async function onError(
  ctx: EngineContext,
  job: Job,
  w: WriteJob,
  err: unknown,
): Promise<WriteResult> {
  const d = decideWrite(ctx, job, w, err);
  // A platform answer other than "may have applied" says the create did not land.
  const clearPending = async (): Promise<void> => {
    if (w.kind === 'create') await ctx.store.clearPending(w.entity, w.keys);
  };
  switch (d.action) {
    case 'pause-queue':
      // A 429 was not applied: the create may go again.
      await clearPending();
      await ctx.store.incrementRun(w.runId, { rateLimited: 1 });
      return pauseQueue(ctx.writeQueue, d.delayMs);
    case 'fail-run':
      await clearPending();
      await failRun(ctx, w.runId, d.reason);
      return 'skipped';
    case 'settle-unknown':
      ctx.logger.warn(
        { runId: w.runId, line: w.line, code: err instanceof PlatformError ? err.code : undefined },
        d.reason,
      );
      return settle(ctx, w, 'pending');
    case 'reject':
      await clearPending();
      return settle(ctx, w, 'rejected', {
        line: w.line,
        kind: 'rejected',
        reason: d.reason,
        identity: w.keys[0]!,
        ...(d.field !== undefined && { field: d.field }),
      });
    case 'give-up':
      await clearPending();
      // Past the 429 cap the job fails for good; settleAbandoned records it.
      if (d.after === 'rate-limits') throw new RateLimitRetriesExhaustedError(d.reason);
      return settle(ctx, w, 'failed', {
        line: w.line,
        kind: 'failed',
        reason: d.reason,
        identity: w.keys[0]!,
      });
    case 'retry-later':
    case 'retry-now':
      // BullMQ's next attempt, after the policy's wait (the queue's backoff
      // strategy). An error that is not the platform's answer (Redis, a bug)
      // says nothing of whether a create landed: its mark stays, and the next
      // attempt finds it pending.
      if (err instanceof PlatformError) await clearPending();
      throw err;
  }
}

async function settle(
  ctx: EngineContext,
  w: WriteJob,
  outcome: WriteOutcome,
  failure?: FailureRow,
): Promise<WriteResult> {
  const s = await ctx.progress.settle(w.runId, w.line, outcome, failure);
  if (s.first && s.settled >= s.planned) await ctx.wakeRun?.(w.runId);
  return s.first ? outcome : 'skipped';
}

/**
 * A write job BullMQ gave up on (its last attempt threw something that is not
 * a platform answer, or its payload was unreadable): settled as failed, so
 * that its run does not wait for it forever.
 */
export async function settleAbandoned(ctx: EngineContext, job: Job, err: Error): Promise<void> {
  const parsed = WriteJobData.safeParse(job.data);
  if (!parsed.success) return;
  const w = parsed.data;
  await settle(ctx, w, 'failed', {
    line: w.line,
    kind: 'failed',
    reason: `write abandoned after ${job.attemptsMade} attempts: ${err.message}`,
    identity: w.keys[0]!,
  });
}

/** Marks the run failed (once); its remaining writes are skipped without a request. */
export async function failRun(ctx: EngineContext, runId: string, message: string): Promise<void> {
  const run = await ctx.store.getRun(runId);
  if (!run || run.status === 'failed') return;
  await endRun(ctx, runId, { status: 'failed', error: message });
  ctx.logger.error({ runId }, message);
}
