/**
 * The one place a run ends: completed (finalize), stopped by a safety
 * threshold (planning), failed (a 401, an unreadable export, …) or
 * cancelled on request (run.ts; a run no worker had taken yet is ended by
 * the cancel itself, src/state/runs.ts). The run's
 * end is told once to whoever listens (`onRunEnd`: alerts), with the record
 * as it is about to be stored, then the record gets its final status and the
 * run's duration is observed.
 *
 * Told before the record is written: a worker that dies in between leaves a
 * run that resumes and ends again, and the listener deduplicates (an alert's
 * id is its run's); told after, the end could be lost. Writing the status
 * last also keeps the time between "the record says ended" and "the run's
 * queue job is done" as short as it was (a caller waiting on the record
 * starts the next run at once, and must not attach to this one).
 */
import { scrubText } from '../log.js';
import type { RunPatch, RunStatus } from '../state/runs.js';
import type { EngineContext } from './context.js';

export async function endRun(
  ctx: EngineContext,
  runId: string,
  patch: RunPatch & {
    status: Extract<RunStatus, 'completed' | 'failed' | 'stopped' | 'cancelled'>;
  },
): Promise<void> {
  const finishedAt = patch.finishedAt ?? Date.now();
  const run = await ctx.store.runs.get(runId);
  if (run && ctx.onRunEnd) {
    const ended = {
      ...run,
      ...patch,
      // As the store will keep it: scrubbed of credentials.
      ...(patch.error !== undefined && { error: scrubText(patch.error) }),
      finishedAt,
      timings: { ...run.timings, ...patch.timings },
    };
    // Never fails the run: a listener that cannot do its work logs it.
    await ctx
      .onRunEnd(ended)
      .catch((err: unknown) =>
        ctx.logger.error({ err, runId }, 'a listener of the run end failed'),
      );
  }
  await ctx.store.runs.update(runId, { ...patch, finishedAt });
  if (run) {
    ctx.metrics?.runDuration.observe(
      { job: run.job, status: patch.status },
      (finishedAt - (run.startedAt ?? run.createdAt)) / 1000,
    );
  }
}
