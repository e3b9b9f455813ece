/**
 * The job definitions of a folder as an operator looks at them: each job's
 * entity, write priority, schedule, next scheduled slot, pause and last run,
 * and the problems of the files that do not load or whose alerts cannot be
 * delivered. Each job comes from the process's loader (src/jobs/job-loader.ts):
 * a file edited since counts, and one unchanged is not read and compiled
 * again on the event loop that paces the writes. Used by the ops API
 * (`GET /api/jobs`, and the schedule state its pause and resume answer).
 */
import { CronExpressionParser } from 'cron-parser';
import { jobAlertProblems } from '../alerts/rules.js';
import type { Config } from '../config.js';
import { loadJobs, type JobDefinition } from '../jobs/definition.js';
import type { JobLoader } from '../jobs/job-loader.js';
import type { PauseState } from '../schedule/pause.js';
import { slotOf } from '../schedule/slot.js';
import type { Runs } from '../state/runs.js';
import { runSummary, type RunSummary } from './run-summary.js';

/** A job's schedule as the scheduler will treat it. */
export interface JobSchedule {
  name: string;
  schedule: string | null;
  /** IANA zone the schedule is read in (UTC when the job names none). */
  timezone: string | null;
  /**
   * The next slot of the schedule after now (ISO, UTC, to the second), as
   * the scheduler names it; a paused job's too (it starts nothing).
   */
  nextSlot: string | null;
  /** Who paused the schedule and since when; null when it runs. */
  paused: PauseState | null;
}

export interface JobOverview extends JobSchedule {
  description: string | null;
  entity: string;
  mode: string;
  /** The preset name, or "inline". */
  mapping: string;
  /** The weight of the job's runs in the write queue's round robin (1 when the file sets none). */
  priority: number;
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

/** The schedule state of a job definition, given its pause. */
export function jobSchedule(
  def: Pick<JobDefinition, 'name' | 'schedule' | 'timezone'>,
  paused: PauseState | null,
  now: Date = new Date(),
): JobSchedule {
  return {
    name: def.name,
    schedule: def.schedule ?? null,
    timezone: def.schedule === undefined ? null : (def.timezone ?? 'UTC'),
    nextSlot: def.schedule === undefined ? null : nextSlot(def.schedule, def.timezone, now),
    paused,
  };
}

export async function listJobs(
  deps: {
    store: { runs: Pick<Runs, 'list'> };
    /** The pause of a job's schedule (src/schedule/pause.ts). */
    pauseOf: (job: string) => Promise<PauseState | null>;
    config: Pick<Config, 'jobsDir' | 'sourceEnv'>;
    jobsDir?: string;
    /** The process's loader of that folder's jobs. */
    loadJob: JobLoader;
  },
  now: Date = new Date(),
): Promise<JobsOverview> {
  const { jobs, problems } = loadJobs(deps.jobsDir ?? deps.config.jobsDir, deps.loadJob);
  const overviews = await Promise.all(
    jobs.map(async (def): Promise<JobOverview> => {
      const [[last], paused] = await Promise.all([
        deps.store.runs.list({ job: def.name, limit: 1 }),
        deps.pauseOf(def.name),
      ]);
      const { name, ...schedule } = jobSchedule(def, paused, now);
      return {
        name,
        description: def.description ?? null,
        entity: def.entity,
        mode: def.mode,
        mapping: def.mappingRef,
        priority: def.priority,
        ...schedule,
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
