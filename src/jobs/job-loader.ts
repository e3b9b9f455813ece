/**
 * Job definitions as a process reads them again and again: a run reads its
 * job at every check on its writes (every 500 ms, in whichever worker takes
 * it then), the API and the scheduler at every request. Parsing the YAML and
 * compiling the mapping cost about a millisecond of CPU each time, warm.
 *
 * A loader keeps the last definition of each job with a stamp of the files
 * it was read from, taken just before they were read (`reading`): the job's
 * `<name>.yaml` and `.yml`, and for a preset mapping every file the preset
 * search tries (a preset added to CRM_SYNC_MAPPINGS_DIR shadows a built-in
 * one). Each load stats those files again; when every one is as it was (the
 * same inode, size, modification and change times, or still absent), the
 * kept definition is the answer. Otherwise the job is read again, so an
 * edit counts at the next load, as when every load read the files. A job
 * that does not load is not kept: its error comes every time.
 */
import { statSync } from 'node:fs';
import {
  JobError,
  loadJob,
  loadJobs,
  type JobDefinition,
  type JobProblem,
  type LoadJobOptions,
} from './definition.js';

export type { JobProblem } from './definition.js';

/** The job definition of a name, as its files say now. */
export type JobLoader = (name: string) => JobDefinition;

interface Kept {
  def: JobDefinition;
  files: string[];
  stamp: string;
}

/** A loader of the jobs of `dir` that reads a job's files again only when one of them has changed. */
export function cachedJobLoader(dir: string, options: LoadJobOptions = {}): JobLoader {
  const kept = new Map<string, Kept>();
  return (name) => {
    const known = kept.get(name);
    if (known !== undefined && stampOf(known.files) === known.stamp) return known.def;
    kept.delete(name);
    const files: string[] = [];
    let stamp: string | undefined = '';
    const reading = (more: readonly string[]): void => {
      files.push(...more);
      const s = stampOf(more);
      stamp = stamp === undefined || s === undefined ? undefined : stamp + s;
    };
    const def = loadJob(dir, name, { ...options, reading });
    if (stamp !== undefined) kept.set(name, { def, files, stamp });
    return def;
  };
}

/**
 * Loads every job of `dir` through `load` now, so that the loader keeps each
 * one that loads: a run's first load of its job is then a stat of its files,
 * not a read and compile that holds the event loop while other runs' paced
 * writes wait (35 ms, cold, in a profile of the fairness bench's worker at
 * the small job's start). Answers the jobs that do not load; their runs fail
 * with the same problems. Whatever a job throws is its problem: one job
 * does not stop a worker's start.
 */
export function preloadJobs(load: JobLoader, dir: string): JobProblem[] {
  const guarded = (name: string): JobDefinition => {
    try {
      return load(name);
    } catch (err) {
      throw err instanceof JobError ? err : new JobError('job.invalid', [String(err)]);
    }
  };
  return loadJobs(dir, guarded).failed;
}

/** The files' inode, size and times, `-` where one is absent; undefined when one cannot be stat'ed. */
function stampOf(files: readonly string[]): string | undefined {
  let stamp = '';
  for (const file of files) {
    try {
      const st = statSync(file, { bigint: true, throwIfNoEntry: false });
      stamp += st ? `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs};` : '-;';
    } catch {
      return undefined;
    }
  }
  return stamp;
}
