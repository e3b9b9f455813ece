/**
 * The one place a run ends: completed (finalize), stopped by a safety
 * threshold (planning) or failed (a 401, an unreadable export, …). The
 * record gets its final status, the run's duration is observed, and the
 * run's end is told once to whoever listens (`onRunEnd`: alerts), after the
 * record says so, so that what is told is what `show` prints.
 */
import type { RunPatch, RunStatus } from '../state/runs.js';
import type { EngineContext } from './context.js';

export async function endRun(
  ctx: EngineContext,
  runId: string,
  patch: RunPatch & { status: Extract<RunStatus, 'completed' | 'failed' | 'stopped'> },
): Promise<void> {
  const finishedAt = patch.finishedAt ?? Date.now();
  await ctx.store.updateRun(runId, { ...patch, finishedAt });
  const run = await ctx.store.getRun(runId);
  if (!run) return;
  ctx.metrics?.runDuration.observe(
    { job: run.job, status: run.status },
    (finishedAt - (run.startedAt ?? run.createdAt)) / 1000,
  );
  // Never fails the run: a listener that cannot do its work logs it.
  await ctx
    .onRunEnd?.(run)
    .catch((err: unknown) => ctx.logger.error({ err, runId }, 'a listener of the run end failed'));
}
