/**
 * The run history as the ops API shows it: newest first, filtered by job and
 * status, each run as its `show --json` summary plus the record's phase
 * timings and, while it goes, its progress. The status filter is applied
 * here, a page of records at a time, so offset and limit count matching runs.
 */
import type { RunRecord, RunStatus, Runs } from '../state/runs.js';
import { hasEnded, runSummary, type RunSummary } from './run-summary.js';

/** Writes and outcomes so far, for a run that has not ended. */
export interface RunProgress {
  writesPlanned: number;
  writesSettled: number;
  created: number;
  updated: number;
  rejected: number;
  failed: number;
}

/** The `show --json` summary, with the milliseconds each phase took and, while it goes, progress. */
export type RunDetail = RunSummary & {
  timings: Record<string, number>;
  progress?: RunProgress;
};

export function runDetail(run: RunRecord): RunDetail {
  const c = run.counts;
  return {
    ...runSummary(run),
    timings: { ...run.timings },
    ...(!hasEnded(run) && {
      progress: {
        writesPlanned: c.writesPlanned,
        writesSettled: c.writesSettled,
        created: c.created,
        updated: c.updated,
        rejected: c.rejected,
        failed: c.failed,
      },
    }),
  };
}

export interface RunQuery {
  job?: string;
  status?: RunStatus;
  limit: number;
  offset: number;
}

const PAGE = 200;

/** The runs matching `query`, newest first. */
export async function listRunDetails(
  store: { runs: Pick<Runs, 'list'> },
  query: RunQuery,
): Promise<RunDetail[]> {
  const job = query.job !== undefined ? { job: query.job } : {};
  if (query.status === undefined) {
    const runs = await store.runs.list({ ...job, limit: query.limit, offset: query.offset });
    return runs.map(runDetail);
  }
  const out: RunDetail[] = [];
  let skip = query.offset;
  for (let at = 0; out.length < query.limit; at += PAGE) {
    const page = await store.runs.list({ ...job, limit: PAGE, offset: at });
    for (const run of page) {
      if (run.status !== query.status) continue;
      if (skip > 0) skip -= 1;
      else if (out.length < query.limit) out.push(runDetail(run));
    }
    // A short page may only mean expired records were passed over: stop at an empty one.
    if (page.length === 0) break;
  }
  return out;
}
