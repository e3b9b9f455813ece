/**
 * The end of a run, once every write has settled: creates whose outcome was
 * unknown are verified with one listing (found ones adopted, missing ones
 * sent again in a new round), orphans are counted, and the run completes.
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

/**
 * Verifies this run's creates whose outcome was unknown (one listing covers
 * them all): found ones are adopted, missing ones are sent again in a new
 * round. Then reports orphans and completes the run.
 */
export async function finalize(
  ctx: EngineContext,
  run: RunRecord,
  def: JobDefinition,
  log: EngineContext['logger'],
): Promise<void> {
  const { store, progress } = ctx;
  const entity = def.entity;
  const mine = (await store.listPending(entity)).filter((p) => p.runId === run.id);
  if (mine.length > 0) {
    await refreshIndex(ctx, entity);
    const holders = await store.claimHolders(run.id, [...new Set(mine.map((p) => p.key))]);
    const lines = holders.filter((l): l is number => l !== null);
    const actions = await store.plannedWritesOf(run.id, [...new Set(lines)]);
    const known = await store.lookup(entity, actions, { job: run.job });
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
    await store.commit(entity, found);
    await progress.confirmCreated(run.id, foundLines);
    for (const a of missing) await store.clearPending(entity, a.keys);
    log.info(
      { verified: found.length, missing: missing.length },
      'creates with unknown outcome verified by listing',
    );
    if (missing.length > 0) {
      const round = await store.nextCreateRound(run.id);
      if (round > ctx.settings.maxCreateRounds) {
        await store.addFailures(
          run.id,
          missing.map((a) => ({
            line: a.line,
            kind: 'failed' as const,
            reason: `create not confirmed after ${ctx.settings.maxCreateRounds} rounds of verification`,
            identity: a.keys[0]!,
          })),
        );
        await store.incrementRun(run.id, { failed: missing.length });
      } else {
        await progress.unsettle(
          run.id,
          missing.map((a) => a.line),
        );
        await store.incrementRun(run.id, { writesPlanned: missing.length });
        const size = ctx.settings.writeChunk;
        await addInTurn(
          ctx.writeQueue,
          shareOf(run, def, size),
          writeChunks(
            run,
            def,
            missing.map((a) => a.line),
            round,
            size,
          ),
        );
        await store.updateRun(run.id, { status: 'writing', phase: 'waiting' });
        return;
      }
    }
  }

  if (def.fullSnapshot) {
    await store.updateRun(run.id, { phase: 'reporting orphans' });
    // Only this job's records: another job syncing the same entity has its own export.
    let orphans = 0;
    for await (const batch of store.orphans(entity, run)) orphans += batch.length;
    if (orphans > 0) {
      await store.incrementRun(run.id, { orphans });
      log.info({ orphans }, 'records in state but not in this export (the API has no delete)');
    }
  }
  const now = Date.now();
  const finished = await store.getRun(run.id);
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
