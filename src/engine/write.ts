/**
 * One platform write inside a chunk job (write-chunk.ts): claimed, sent,
 * and handed to the chunk's settler, each on its own.
 *
 * Creates are not idempotent, so a create is marked pending in Redis before
 * it is sent and the mark is cleared only when the outcome is known. A create
 * whose outcome is unknown (timeout, connection cut after sending, 5xx, or a
 * worker killed mid-request) stays pending and is never sent again blindly:
 * the run's finalize step lists the platform and adopts or re-creates it.
 *
 * What a fault leads to is the retry policy's decision (src/platform/retry-policy.ts),
 * asked in-process by `withRetry` and once more here when the request gave
 * up: a 429 goes again in-process, held by the client's pacer until its
 * Retry-After has passed, up to the policy's cap; a 401 fails the run at once; a
 * create that may have applied is left pending; a final refusal is recorded
 * as rejected; a transient fault is left unsettled for the chunk job's next
 * attempt, and past the last one the write is recorded as failed.
 */
import type { Job } from 'bullmq';
import { PlatformError, RateLimitedError } from '../platform/errors.js';
import { withRetry } from '../platform/with-retry.js';
import { decide, jitterOf, type Decision } from '../platform/retry-policy.js';
import type { CallOptions } from '../platform/client.js';
import type { CompanyRequest, MemberRequest } from '../platform/schemas.js';
import type { WriteAction } from '../sync/action.js';
import type { Entity } from '../sync/identity.js';
import type { ClaimRequest, FinishedWrite, WriteClaim } from '../state/write-steps.js';
import type { EngineContext } from './context.js';
import type { WriteOutcome } from '../state/progress.js';
import { endRun } from './run-end.js';

/** What became of one write. */
export type WriteResult = WriteOutcome | 'skipped';

/** What a write needs of the chunk it runs in. */
export interface ChunkScope {
  job: Job;
  runId: string;
  entity: Entity;
  createVia: 'companies' | 'customers';
  /** The run's job definition name: the record's writer. */
  jobName: string;
  /** Whether the chunk job's lock is still this worker's, renewed if need be (see write-chunk.ts). */
  holdsLock(): Promise<boolean>;
  signal?: AbortSignal;
  /** Claims a write before its request (in a batch of the run's claims: see write-chunk.ts). */
  claim(c: Omit<ClaimRequest, 'runId' | 'entity'>): Promise<WriteClaim>;
  /** Settles (and commits) a write that ended; true when this settled its line. */
  finish(w: FinishedWrite): Promise<boolean>;
  /** Starts no more writes of the chunk (the run ended, the lock is lost, a 401). */
  stop(why: string): void;
}

/** How one write ended: a result, or left for the chunk job's next attempt with its error. */
export type WriteEnd = { result: WriteResult } | { retry: unknown };

/** Claims, sends and settles one write; a 429 goes again here, up to the policy's cap. */
export async function runWrite(
  ctx: EngineContext,
  scope: ChunkScope,
  a: WriteAction,
): Promise<WriteEnd> {
  const operation = operationOf(a, scope);
  for (let rateLimited = 0; ; rateLimited++) {
    // A worker starved past its lock wakes up after BullMQ handed the chunk
    // to another worker, which may have sent this create already: claim and
    // send only while this attempt still holds the lock, renewed so that the
    // request goes out well within it.
    if (a.kind === 'create' && !(await scope.holdsLock())) {
      ctx.logger.warn(
        { runId: scope.runId, line: a.line },
        'write lock lost; another worker has it',
      );
      scope.stop('the chunk lock is lost');
      return { result: 'skipped' };
    }
    const claim = await scope.claim({
      line: a.line,
      ...(a.kind === 'create' && { createKeys: a.keys }),
    });
    switch (claim) {
      case 'ended':
        scope.stop('the run has ended');
        return { result: 'skipped' };
      case 'settled':
        return { result: 'skipped' };
      case 'pending':
        // An earlier attempt left it pending: only listing can tell.
        return settle(scope, a, 'pending', false);
      case 'exists':
        return { result: await existing(ctx, scope, a) };
      case 'go':
        break;
    }
    try {
      const result = await send(ctx, scope, a);
      ctx.metrics?.writes.inc({ operation, status: 'ok' });
      return result;
    } catch (err) {
      if (err instanceof PlatformError) {
        ctx.metrics?.writes.inc({ operation, status: String(err.statusCode ?? err.code) });
      }
      if (err instanceof RateLimitedError) {
        ctx.metrics?.rateLimited.inc({ operation });
        await ctx.store.runs.increment(scope.runId, { rateLimited: 1 });
      }
      const d = decideWrite(ctx, scope, a, err, rateLimited);
      if (d.action === 'pause-queue') {
        // A 429 was not applied: the create may go again. The client's pacer
        // has noted the Retry-After: it holds this request, and every other
        // of every replica, until then.
        if (a.kind === 'create')
          await ctx.store.writes.release(scope.runId, scope.entity, a.line, a.keys);
        continue;
      }
      return onError(ctx, scope, a, err, d);
    }
  }
}

/** The route template of a write, for metrics labels. */
function operationOf(a: WriteAction, scope: ChunkScope): string {
  if (a.kind === 'update') return `PUT /${scope.entity}/{id}`;
  return scope.entity === 'companies' && scope.createVia === 'customers'
    ? 'POST /customers'
    : `POST /${scope.entity}`;
}

async function send(ctx: EngineContext, scope: ChunkScope, a: WriteAction): Promise<WriteEnd> {
  const call: CallOptions = scope.signal ? { signal: scope.signal } : {};
  if (a.kind === 'update') {
    const id = a.platformId;
    await withRetry(
      () =>
        scope.entity === 'members'
          ? ctx.client.updateMember(id, a.body as MemberRequest, call)
          : ctx.client.updateCompany(id, a.body as CompanyRequest, call),
      { operation: 'update', settings: ctx.settings.retry, ...call },
    );
    return settle(scope, a, 'updated', true, id);
  }
  const record = await withRetry(
    () =>
      scope.entity === 'members'
        ? ctx.client.createMember(a.body as MemberRequest, call)
        : scope.createVia === 'customers'
          ? ctx.client.createCustomer(a.body as CompanyRequest, call)
          : ctx.client.createCompany(a.body as CompanyRequest, call),
    { operation: 'create', settings: ctx.settings.retry, ...call },
  );
  if (typeof record.id !== 'number') {
    // Created, but we cannot tell which record it is: leave it pending for listing.
    ctx.logger.warn(
      { runId: scope.runId, line: a.line },
      'create answered without an id; verifying by listing',
    );
    return settle(scope, a, 'pending', false);
  }
  return settle(scope, a, 'created', true, record.id);
}

/** A create whose key maps to a record already: this write's own, or another run's. */
async function existing(
  ctx: EngineContext,
  scope: ChunkScope,
  a: WriteAction,
): Promise<WriteResult> {
  const [known] = await ctx.store.records.lookup(scope.entity, [{ keys: a.keys }]);
  if (known?.storedHash === a.hash) return (await settle(scope, a, 'created', false)).result;
  const end = await settle(scope, a, 'failed', false, undefined, {
    reason: 'the record was created meanwhile by another run; the next run updates it',
  });
  return end.result;
}

/** What the retry policy says of a write the in-process layer gave up on. */
function decideWrite(
  ctx: EngineContext,
  scope: ChunkScope,
  a: WriteAction,
  err: unknown,
  rateLimited: number,
): Decision {
  const { job } = scope;
  const attempt = job.attemptsMade + 1;
  return decide(
    err,
    {
      operation: a.kind,
      durableAttempt: attempt,
      durableAttempts: job.opts.attempts ?? 1,
      rateLimited,
      ...(a.kind === 'update' && { platformId: a.platformId }),
      // The same draw as the queue's backoff strategy makes for this job and attempt.
      random: jitterOf(`${job.id ?? ''}:${attempt}`),
    },
    ctx.settings.retry,
  );
}

async function onError(
  ctx: EngineContext,
  scope: ChunkScope,
  a: WriteAction,
  err: unknown,
  d: Decision,
): Promise<WriteEnd> {
  // A platform answer other than "may have applied" says the create did not land.
  const clear = a.kind === 'create';
  switch (d.action) {
    case 'pause-queue':
      throw new Error('a 429 is retried by the write itself');
    case 'fail-run':
      if (clear) await ctx.store.writes.release(scope.runId, scope.entity, a.line, a.keys);
      scope.stop(d.reason);
      await failRun(ctx, scope.runId, d.reason);
      return { result: 'skipped' };
    case 'settle-unknown':
      ctx.logger.warn(
        {
          runId: scope.runId,
          line: a.line,
          code: err instanceof PlatformError ? err.code : undefined,
        },
        d.reason,
      );
      return settle(scope, a, 'pending', false);
    case 'reject':
      return settle(scope, a, 'rejected', clear, undefined, {
        reason: d.reason,
        ...(d.field !== undefined && { field: d.field }),
      });
    case 'give-up':
      return settle(scope, a, 'failed', clear, undefined, { reason: d.reason });
    case 'retry-later':
    case 'retry-now':
      // The chunk job's next attempt, after the policy's wait (the queue's
      // backoff strategy). An error that is not the platform's answer (Redis,
      // a bug) says nothing of whether a create landed: its mark stays, and
      // the next attempt finds it pending.
      if (clear && err instanceof PlatformError) {
        await ctx.store.writes.release(scope.runId, scope.entity, a.line, a.keys);
      }
      return { retry: err };
  }
}

async function settle(
  scope: ChunkScope,
  a: WriteAction,
  outcome: WriteOutcome,
  clearPending: boolean,
  platformId?: number,
  failure?: { reason: string; field?: string },
): Promise<{ result: WriteResult }> {
  const first = await scope.finish({
    line: a.line,
    outcome,
    keys: a.keys,
    clearPending,
    ...(platformId !== undefined && {
      commit: { platformId, hash: a.hash, job: scope.jobName },
    }),
    ...(failure && {
      failure: {
        line: a.line,
        kind: outcome === 'rejected' ? 'rejected' : 'failed',
        identity: a.keys[0]!,
        ...failure,
      },
    }),
  });
  return { result: first ? outcome : 'skipped' };
}

/** Marks the run failed (once); its remaining writes are skipped without a request. */
export async function failRun(ctx: EngineContext, runId: string, message: string): Promise<void> {
  const run = await ctx.store.runs.get(runId);
  if (!run || run.status === 'failed') return;
  await endRun(ctx, runId, { status: 'failed', error: message });
  ctx.logger.error({ runId }, message);
}
