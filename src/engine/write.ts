/**
 * One platform write: the processor of a `platform-writes` job.
 *
 * Creates are not idempotent, so a create is marked pending in Redis before
 * it is sent and the mark is cleared only when the outcome is known. A create
 * whose outcome is unknown (timeout, connection cut after sending, 5xx, or a
 * worker killed mid-request) stays pending and is never sent again blindly:
 * the run's finalize step lists the platform and adopts or re-creates it.
 *
 * Retries, by layer: transient faults are retried in-process (p-retry) when
 * the request is idempotent or cannot have been applied; then BullMQ attempts
 * with backoff; a 429 pauses the whole queue and hands the job back; a 401
 * fails the run at once; other 4xx are final and recorded as rejected.
 */
import type { Job } from 'bullmq';
import { UnrecoverableError } from 'bullmq';
import {
  BadRequestError,
  NotFoundError,
  PlatformError,
  RateLimitedError,
  UnauthorizedError,
} from '../platform/errors.js';
import { withRetry } from '../platform/retry.js';
import type { CallOptions } from '../platform/client.js';
import type { CompanyRequest, MemberRequest } from '../platform/schemas.js';
import { applyRateLimited } from '../queue/limiter.js';
import type { FailureRow } from '../state/runs.js';
import type { EngineContext } from './context.js';
import { WriteJobData, type WriteJob } from './payloads.js';
import type { WriteOutcome } from '../state/progress.js';

export const UNAUTHORIZED_MESSAGE =
  'the platform refused the API key (401 Unauthorized): check PLATFORM_API_KEY; the run stopped without retrying';

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
    { idempotent: false, retries: ctx.settings.inProcessRetries, ...call },
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
    { idempotent: true, retries: ctx.settings.inProcessRetries, ...call },
  );
  await ctx.store.commit(w.entity, [
    { keys: w.keys, platformId: id, hash: w.hash, runId: w.runId, job: jobName },
  ]);
  return settle(ctx, w, 'updated');
}

async function onError(
  ctx: EngineContext,
  job: Job,
  w: WriteJob,
  err: unknown,
): Promise<WriteResult> {
  const isCreate = w.kind === 'create';
  if (!(err instanceof PlatformError)) throw err; // Redis down and the like: BullMQ retries the job.

  if (err instanceof RateLimitedError) {
    // A 429 was not applied: the create may go again. Past the cap the job
    // fails (RateLimitRetriesExhaustedError) and is settled by settleAbandoned.
    if (isCreate) await ctx.store.clearPending(w.entity, w.keys);
    return applyRateLimited(
      ctx.writeQueue,
      job,
      err.retryAfterMs ?? 1_000,
      ctx.settings.maxRateLimitRetries,
    );
  }
  if (err instanceof UnauthorizedError) {
    if (isCreate) await ctx.store.clearPending(w.entity, w.keys);
    await failRun(ctx, w.runId, UNAUTHORIZED_MESSAGE);
    return 'skipped';
  }
  if (isCreate && err.mayHaveApplied) {
    ctx.logger.warn(
      { runId: w.runId, line: w.line, code: err.code },
      'create outcome unknown; it will be verified by listing',
    );
    return settle(ctx, w, 'pending');
  }
  if (isCreate) await ctx.store.clearPending(w.entity, w.keys);

  if (!err.retryable) {
    const reason =
      err instanceof NotFoundError && !isCreate
        ? `platform record ${w.platformId} no longer exists (404)`
        : rejectionReason(err);
    const field = err instanceof BadRequestError ? Object.keys(err.fields)[0] : undefined;
    return settle(ctx, w, 'rejected', {
      line: w.line,
      kind: 'rejected',
      reason,
      identity: w.keys[0]!,
      ...(field !== undefined && { field }),
    });
  }
  // Transient and not applied: BullMQ's next attempt, or the end of them.
  const attempts = job.opts.attempts ?? 1;
  if (job.attemptsMade + 1 < attempts) throw err;
  return settle(ctx, w, 'failed', {
    line: w.line,
    kind: 'failed',
    reason: `gave up after ${attempts} attempts: ${err.message}`,
    identity: w.keys[0]!,
  });
}

/** The platform's own words for a 4xx: its field messages, or its detail. */
function rejectionReason(err: PlatformError): string {
  if (err instanceof BadRequestError) {
    const parts = Object.entries(err.fields).map(([f, msgs]) => `${f}: ${msgs.join(' ')}`);
    if (parts.length > 0) return `platform said ${err.statusCode}: ${parts.join('; ')}`;
  }
  return `platform said ${err.statusCode ?? ''}: ${err.detail ?? err.message}`.replace(/ {2}/, ' ');
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
  await ctx.store.updateRun(runId, { status: 'failed', error: message, finishedAt: Date.now() });
  ctx.logger.error({ runId }, message);
}
