/**
 * A run's planning phase (status `planning`), between `queued` and `writing`:
 * the platform index refreshed when needed, the planning pass (`planExport`,
 * in plan-pass.ts) streamed into the run's scratch in Redis through
 * `redisPlanningSink`, the counts published, and the safety thresholds
 * checked before anything is written. Cut off by a crash, it starts again
 * from the top: it has written nothing to the platform. A cancel of the run
 * stops it at its next progress report (`RunCancelledError`).
 */
import { sinceText } from '../crm/since.js';
import { checkPathCoverage, describeUnmatched, unmatchedPaths } from '../crm/path-coverage.js';
import type { JobDefinition } from '../jobs/definition.js';
import type { RunRecord } from '../state/runs.js';
import { checkThresholds } from '../sync/thresholds.js';
import type { EngineContext } from './context.js';
import type { RunJobRequest } from './payloads.js';
import { planExport, type PlanCounts } from './plan-pass.js';
import { redisPlanningSink } from './run-planning-sink.js';
import { refreshIndex } from './reconcile.js';
import { RunCancelledError } from './run-cancel.js';
import { endRun } from './run-end.js';
import { pullSince, sourceEnvOf, sourceOf } from './run-source.js';
import { hasEnded } from './run-summary.js';
import { chunkLines, limitNow } from './write-sizing.js';

/**
 * The planning phase of a run: lists the platform when the index needs it,
 * runs the planning pass over the export into Redis, then checks the
 * thresholds: the run goes on to `writing`, or ends `stopped` before any write.
 */
export async function planRun(
  ctx: EngineContext,
  run: RunRecord,
  def: JobDefinition,
  req: RunJobRequest,
  log: EngineContext['logger'],
): Promise<void> {
  const { store } = ctx;
  const { progress } = store;
  const runId = run.id;
  const started = Date.now();
  // A pass cut off starts over from nothing; a new run has nothing to forget yet.
  if (run.status === 'planning') {
    log.info('planning was cut off; starting it again');
    await progress.resetPlanning(runId);
  }
  await store.runs.update(runId, {
    status: 'planning',
    phase: 'checking the platform index',
    startedAt: started,
  });

  const entity = def.entity;
  const [index, previous, pending] = await Promise.all([
    store.index.info(entity),
    store.runs.list({ job: def.name, limit: 50 }),
    store.records.listPending(entity),
  ]);
  // The change share says nothing on a job's first sync: everything is new to it.
  const lastCompleted = previous.find((r) => r.status === 'completed');
  const firstSync = lastCompleted === undefined;
  const maxAge = def.indexMaxAgeHours * 3_600_000;
  // Creates a run that has ended left unverified: the listing tells which landed.
  const live = await liveRunsOf(ctx, pending);
  const toVerify = pending.some((p) => !live.has(p.runId));
  const reasons = [
    !index && 'first listing',
    req.full && '--full',
    index && Date.now() - index.refreshedAt > maxAge && 'index older than indexMaxAgeHours',
    toVerify && 'creates to verify',
  ].filter(Boolean);
  if (reasons.length > 0) {
    await store.runs.update(runId, { phase: `listing platform ${entity} (${reasons.join(', ')})` });
    await refreshIndex(ctx, entity);
    if (pending.length > 0) await resolveForeignPending(ctx, entity);
  }

  // `{{since}}` in the URL: only what changed since the last run that left nothing to retry.
  const since = pullSince(def, req, previous);
  const reading = since ? `reading the changes since ${sinceText(since)}` : 'reading the export';
  await store.runs.update(runId, { phase: reading });
  const sink = redisPlanningSink(ctx.store, runId, entity, def.name, {
    verifyRemote: req.full,
    duplicates: def.mapping.duplicates,
  });
  let lastFlush = 0;
  // A required field whose path finds nothing in the first rows stops the run, as a threshold does.
  let pathStop: string | undefined;
  const counts = await planExport({
    entity,
    mapping: def.mapping,
    source: sourceOf(def, req, since),
    env: sourceEnvOf(def, req, ctx.sourceEnv),
    mode: req.mode ?? def.mode,
    memberUpdates: def.membersUpdate === 'put',
    duplicates: def.mapping.duplicates,
    verifyRemote: req.full,
    sink,
    logger: ctx.logger,
    batchSize: ctx.settings.batchSize,
    onProgress: async (c) => {
      if (Date.now() - lastFlush < 250) return;
      lastFlush = Date.now();
      await progress.setCounts(runId, runCountsOf(c));
      // A cancel stops planning here: nothing has been written.
      if ((await store.runs.get(runId))?.cancelRequested !== undefined)
        throw new RunCancelledError(runId, 'planning');
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
  const planned = await store.plannedWrites.count(runId);
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
      // An incremental pull of 0 rows means nothing changed; a full export of 0 rows is broken.
      ...(since === undefined && lastCompleted && { lastCompletedRead: lastCompleted.counts.read }),
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
  const writeChunk = chunkLines(ctx.settings, await limitNow(ctx));
  await store.runs.update(runId, { status: 'writing', phase: 'enqueueing', writeChunk, timings });
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
    duplicates: c.duplicate,
    skipped: c.skip + c.pending,
    unsupported: c.unsupported,
    warnings: c.warnings,
    plannedCreates: c.create,
    plannedUpdates: c.update,
  };
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
  const pending = await ctx.store.records.listPending(entity);
  const live = await liveRunsOf(ctx, pending);
  await ctx.store.records.clearPending(
    entity,
    pending.filter((p) => !live.has(p.runId)).map((p) => p.key),
  );
}

/**
 * The runs still going among the owners of pending creates. Their creates
 * are theirs to verify: a run that finds only those lists nothing for them
 * (a job started while another is writing would otherwise list the whole
 * entity before its first write).
 */
async function liveRunsOf(
  ctx: EngineContext,
  pending: readonly { runId: string }[],
): Promise<Set<string>> {
  const live = new Set<string>();
  for (const id of new Set(pending.map((p) => p.runId))) {
    const owner = await ctx.store.runs.get(id);
    if (owner && !hasEnded(owner)) live.add(id);
  }
  return live;
}
