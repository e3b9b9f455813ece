/**
 * The end of a run, once every write has settled: creates whose outcome was
 * unknown are verified with one listing (found ones adopted, missing ones
 * sent again in a new round), orphans are counted, and the run completes.
 *
 * A cancel of the run stops it until its last step: the listing's request
 * in flight is aborted, the orphan count stops, and creates to send again
 * are not sent (their chunks are refused and removed, run.ts). Finalize
 * writes nothing to the platform itself, so a cancelled finalize leaves
 * nothing half-sent: creates not verified keep their pending marks, and the
 * next run of the entity lists the platform and adopts the ones that landed. The last step,
 * `markCompleting`, decides between the two ends atomically: after it a
 * cancel is refused and the run ends completed; before it the cancel wins.
 */
import type { JobDefinition } from '../jobs/definition.js';
import { addInTurn } from '../queue/fair-share-store.js';
import { RUN_OUTCOMES, type RunRecord } from '../state/runs.js';
import type { WriteAction } from '../sync/action.js';
import { foreignRecordReason } from '../sync/match.js';
import type { CommitEntry } from '../state/records.js';
import type { EngineContext } from './context.js';
import { refreshIndex } from './reconcile.js';
import { shareOf, writeChunks } from './payloads.js';
import { endRun } from './run-end.js';
import { RunCancelledError, watchCancel } from './run-cancel.js';

/**
 * Verifies this run's creates whose outcome was unknown (one listing covers
 * them all): found ones are adopted, missing ones are sent again in a new
 * round. Then reports orphans and completes the run. A cancel of the run
 * throws `RunCancelledError` (run.ts ends the run cancelled).
 */
export async function finalize(
  ctx: EngineContext,
  run: RunRecord,
  def: JobDefinition,
  log: EngineContext['logger'],
): Promise<void> {
  const watch = watchCancel(ctx.store, run.id, ctx.settings.pollMs);
  try {
    await verifyAndComplete(ctx, run, def, log, watch.signal);
  } catch (err) {
    // Whatever the aborted listing threw: the run was cancelled.
    if (watch.signal.aborted) throw new RunCancelledError(run.id, 'finalizing');
    throw err;
  } finally {
    watch.stop();
  }
}

async function verifyAndComplete(
  ctx: EngineContext,
  run: RunRecord,
  def: JobDefinition,
  log: EngineContext['logger'],
  cancelled: AbortSignal,
): Promise<void> {
  const { store } = ctx;
  const { progress } = store;
  const entity = def.entity;
  const mine = (await store.records.listPending(entity)).filter((p) => p.runId === run.id);
  if (mine.length > 0) {
    await refreshIndex(ctx, entity, cancelled);
    // Cancelled as the listing ended: nothing is recorded from it (the next run lists again).
    cancelled.throwIfAborted();
    const holders = await store.claims.holders(run.id, [...new Set(mine.map((p) => p.key))]);
    const lines = holders.filter((l): l is number => l !== null);
    const actions = await store.plannedWrites.of(run.id, [...new Set(lines)]);
    const known = await store.records.lookup(entity, actions, { job: run.job });
    const found: CommitEntry[] = [];
    const foundLines: number[] = [];
    const missing: WriteAction[] = [];
    actions.forEach((a, n) => {
      const k = known[n];
      // Another source's record, found through a weaker key, is not this create's.
      const platformId =
        k?.platformId !== undefined &&
        foreignRecordReason(entity, a.keys, { ...k, platformId: k.platformId }) === undefined
          ? k.platformId
          : undefined;
      if (platformId === undefined) missing.push(a);
      else {
        found.push({ keys: a.keys, platformId, hash: a.hash, runId: run.id, job: run.job });
        foundLines.push(a.line);
      }
    });
    await store.records.commit(entity, found);
    await progress.confirmCreated(run.id, foundLines);
    for (const a of missing) await store.records.clearPending(entity, a.keys);
    log.info(
      { verified: found.length, missing: missing.length },
      'creates with unknown outcome verified by listing',
    );
    if (missing.length > 0) {
      const round = await store.runs.nextCreateRound(run.id);
      if (round > ctx.settings.maxCreateRounds) {
        await store.runs.addFailures(
          run.id,
          missing.map((a) => ({
            line: a.line,
            kind: 'failed' as const,
            reason: `create not confirmed after ${ctx.settings.maxCreateRounds} rounds of verification`,
            identity: a.keys[0]!,
          })),
        );
        await store.runs.increment(run.id, { failed: missing.length });
      } else {
        await progress.unsettle(
          run.id,
          missing.map((a) => a.line),
        );
        await store.runs.increment(run.id, { writesPlanned: missing.length });
        const share = shareOf(run, def, ctx.settings.writeChunk);
        await addInTurn(
          ctx.writeQueue,
          share,
          writeChunks(
            run,
            def,
            missing.map((a) => a.line),
            round,
            share.chunkSize,
          ),
        );
        await store.runs.update(run.id, { status: 'writing', phase: 'waiting' });
        return;
      }
    }
  }

  if (def.fullSnapshot) {
    await store.runs.update(run.id, { phase: 'reporting orphans' });
    // Only this job's records: another job syncing the same entity has its own export.
    let orphans = 0;
    for await (const batch of store.records.orphans(entity, run)) {
      cancelled.throwIfAborted();
      orphans += batch.length;
    }
    if (orphans > 0) {
      await store.runs.increment(run.id, { orphans });
      log.info({ orphans }, 'records in state but not in this export (the API has no delete)');
    }
  }
  // The point of no return: a cancel asked for before it wins, one asked for after is refused.
  if (!(await store.runs.markCompleting(run.id))) throw new RunCancelledError(run.id, 'finalizing');
  const now = Date.now();
  const finished = await store.runs.get(run.id);
  if (ctx.metrics && finished) {
    const c = finished.counts;
    ctx.metrics.rowsRead.inc({ job: run.job }, c.read);
    for (const outcome of RUN_OUTCOMES) {
      if (c[outcome] > 0) ctx.metrics.records.inc({ job: run.job, outcome }, c[outcome]);
    }
  }
  await endRun(ctx, run.id, {
    status: 'completed',
    phase: 'done',
    finishedAt: now,
    timings: { total: now - (run.startedAt ?? run.createdAt) },
  });
  await progress.clear(run.id);
  log.info('run completed');
}
