/**
 * The job definitions of a folder as an operator looks at them: each job's
 * entity, schedule, next scheduled slot and last run, and the problems of
 * the files that do not load or whose alerts cannot be delivered. Read fresh on every call (a job file edited
 * since counts). Used by the ops API (`GET /api/jobs`).
 */
import { CronExpressionParser } from 'cron-parser';
import { jobAlertProblems } from '../alerts/rules.js';
import type { Config } from '../config.js';
import { loadJobs } from '../jobs/definition.js';
import { slotOf } from '../schedule/slot.js';
import type { StateStore } from '../state/store.js';
import { runSummary, type RunSummary } from './run-summary.js';

export interface JobOverview {
  name: string;
  description: string | null;
  entity: string;
  mode: string;
  /** The preset name, or "inline". */
  mapping: string;
  schedule: string | null;
  /** IANA zone the schedule is read in (UTC when the job names none). */
  timezone: string | null;
  /** The next slot of the schedule after now (ISO, UTC, to the second), as the scheduler names it. */
  nextSlot: string | null;
  lastRun: RunSummary | null;
}

export interface JobsOverview {
  jobs: JobOverview[];
  /**
   * Every problem of every file that does not load, and of every job whose
   * alerts cannot be delivered (a webhook variable not set), each naming its file.
   */
  problems: string[];
}

/** The next firing of `schedule` strictly after `now`, as a slot; null when it has none. */
export function nextSlot(schedule: string, timezone: string | undefined, now: Date): string | null {
  try {
    const expression = CronExpressionParser.parse(schedule, {
      currentDate: now,
      tz: timezone ?? 'UTC',
    });
    return slotOf(expression.next().toDate());
  } catch {
    // A schedule that validates but never fires (e.g. 30 February).
    return null;
  }
}

export async function listJobs(
  deps: {
    store: Pick<StateStore, 'listRuns'>;
    config: Pick<Config, 'jobsDir' | 'mappingsDir' | 'sourceEnv'>;
    jobsDir?: string;
  },
  now: Date = new Date(),
): Promise<JobsOverview> {
  const { jobs, problems } = loadJobs(deps.jobsDir ?? deps.config.jobsDir, {
    mappingsDir: deps.config.mappingsDir,
  });
  const overviews = await Promise.all(
    jobs.map(async (def): Promise<JobOverview> => {
      const [last] = await deps.store.listRuns({ job: def.name, limit: 1 });
      return {
        name: def.name,
        description: def.description ?? null,
        entity: def.entity,
        mode: def.mode,
        mapping: def.mappingRef,
        schedule: def.schedule ?? null,
        timezone: def.schedule === undefined ? null : (def.timezone ?? 'UTC'),
        nextSlot: def.schedule === undefined ? null : nextSlot(def.schedule, def.timezone, now),
        lastRun: last ? runSummary(last) : null,
      };
    }),
  );
  overviews.sort((a, b) => a.name.localeCompare(b.name));
  return {
    jobs: overviews,
    problems: [...problems, ...jobAlertProblems(jobs, deps.config.sourceEnv)],
  };
}
