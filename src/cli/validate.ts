/**
 * `crm-sync validate [--jobs DIR] [--fetch]`: loads every job file of the
 * folder and compiles its mapping, and reports every problem of every file at
 * once (file and path), so one pass fixes them all. A path source that does
 * not exist yet is a warning, not a problem: exports are often dropped just
 * before the run. Then it reads each local export whole, streamed, and says
 * how many rows it has, the encodings they were read in and what a run would
 * warn of or find invalid (validate-export.ts); and warns of each mapped
 * column or path that found nothing in the first 1,000 rows (of URL sources
 * too with `--fetch`, which reads only those: validate-paths.ts). A line
 * where the source's `recordPath` or `stream` found no record is a problem,
 * and so is a job's alerts webhook that names an environment variable not
 * set (or empty) here: its alerts could not be delivered.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import type { JobDefinition } from '../jobs/definition.js';
import { jobsOption } from './options.js';
import { ExitCode } from './output.js';

export function registerValidateCommand(program: Command): void {
  jobsOption(
    program
      .command('validate')
      .description('check every job definition and its mapping; list every problem at once')
      .option('--fetch', 'also read the first rows of URL sources to check the mapped paths'),
  ).action(async (flags: { jobs?: string; fetch?: boolean }) => {
    const { jobAlertProblems } = await import('../alerts/rules.js');
    const { loadConfig } = await import('../config.js');
    const { loadJobs } = await import('../jobs/definition.js');
    const { pathReport } = await import('./validate-paths.js');
    const config = loadConfig();
    const dir = resolve(flags.jobs ?? config.jobsDir);
    const loaded = loadJobs(dir, { mappingsDir: config.mappingsDir });
    const { jobs } = loaded;
    // A webhook whose variable is not set here would drop every alert of its job.
    const problems = [...loaded.problems, ...jobAlertProblems(jobs, config.sourceEnv)];
    for (const job of jobs) process.stdout.write(`ok ${describe(job)}\n`);
    for (const job of jobs) {
      const path = job.source.path;
      if (path !== undefined && !existsSync(path)) {
        process.stderr.write(`warning: ${job.file}: source.path: ${path} does not exist (yet)\n`);
      }
    }
    for (const job of jobs) {
      const report = await pathReport(job, { fetch: flags.fetch === true, env: config.sourceEnv });
      for (const line of report.lines) process.stderr.write(`${line}\n`);
      problems.push(...report.problems);
    }
    for (const p of problems) process.stderr.write(`${p}\n`);
    if (problems.length > 0) {
      process.stderr.write(
        `${problems.length} problem(s) in ${dir}; ${jobs.length} job(s) valid\n`,
      );
      process.exitCode = ExitCode.config;
    } else if (jobs.length === 0) {
      process.stderr.write(`no job definitions (*.yaml) in ${dir}\n`);
      process.exitCode = ExitCode.config;
    }
  });
}

function describe(job: JobDefinition): string {
  const schedule = job.schedule
    ? `, schedule '${job.schedule}'${job.timezone ? ` ${job.timezone}` : ''}`
    : '';
  return `${job.name}: ${job.entity} from ${job.source.path ?? job.source.url} (mapping ${job.mappingRef}, mode ${job.mode}, priority ${job.priority}${schedule})`;
}
