/**
 * A run belongs to the state layout of the release that started it (stamped
 * in its record, src/state/runs.ts). A worker meeting a run of another
 * layout leaves it for a worker of that layout (the job goes back to the
 * delayed set and is looked at again later): it never writes it, and never
 * fails it. Ended runs are nobody's to write and pass.
 */
import type { Job } from 'bullmq';
import { LAYOUT_VERSION } from '../state/keys.js';
import type { RunRecord, RunStatus } from '../state/runs.js';
import type { EngineContext } from './context.js';

/** How long a left run waits before a worker looks at it again. */
export const LEAVE_MS = 60_000;

const ENDED: readonly RunStatus[] = ['completed', 'failed', 'stopped', 'cancelled'];

/** True when the run was left (its job moved to the delayed set): the caller throws DelayedError. */
export async function leaveRunOfOtherLayout(
  ctx: EngineContext,
  job: Job,
  token: string | undefined,
  run: RunRecord,
): Promise<boolean> {
  if (ENDED.includes(run.status)) return false;
  const layout = await ctx.store.runs.claimLayout(run.id);
  if (layout === LAYOUT_VERSION) return false;
  ctx.logger.warn(
    { runId: run.id, job: run.job, layout, ours: LAYOUT_VERSION },
    'run started by a crm-sync release of another state layout; left to its workers',
  );
  await job.moveToDelayed(Date.now() + LEAVE_MS, token);
  return true;
}
