/**
 * `crm-sync pause JOB` and `crm-sync resume JOB`: stop and restart a job's
 * schedule without editing its file (src/schedule/pause.ts says what a
 * pause does). The pause names who paused it, `cli:` and the OS user.
 */
import { userInfo } from 'node:os';
import type { Command } from 'commander';
import { jobsOption } from './options.js';
import { ExitCode } from './output.js';

interface ScheduleFlags {
  jobs?: string;
  json?: boolean;
}

export function registerScheduleCommands(program: Command): void {
  jobsOption(
    program
      .command('pause')
      .description("pause a job's schedule: its slots start no run and are not alerted as missed")
      .argument('<job>', 'name of the job definition')
      .option('--json', "print the job's schedule state as one JSON object"),
  ).action(async (job: string, flags: ScheduleFlags) => {
    process.exitCode = await scheduleCommand('pause', job, flags);
  });
  jobsOption(
    program
      .command('resume')
      .description(
        "resume a job's schedule from its next slot (slots passed while paused are not run)",
      )
      .argument('<job>', 'name of the job definition')
      .option('--json', "print the job's schedule state as one JSON object"),
  ).action(async (job: string, flags: ScheduleFlags) => {
    process.exitCode = await scheduleCommand('resume', job, flags);
  });
}

/** Who pauses from this shell: `cli:` and the OS user (just `cli` when it has no name). */
function operator(): string {
  try {
    return `cli:${userInfo().username}`;
  } catch {
    return 'cli';
  }
}

async function scheduleCommand(
  action: 'pause' | 'resume',
  name: string,
  flags: ScheduleFlags,
): Promise<number> {
  const { cliRuntime, openProducer } = await import('./runtime.js');
  const { jobSchedule } = await import('../engine/job-service.js');
  const { jobLoader } = await import('../engine/run-service.js');
  const { pauseJob, resumeJob } = await import('../schedule/pause.js');
  const { config } = cliRuntime();
  const def = jobLoader(config, flags.jobs ?? config.jobsDir)(name);
  if (action === 'pause' && def.schedule === undefined) {
    process.stderr.write(`crm-sync: job ${def.name} has no schedule to pause\n`);
    return ExitCode.failed;
  }
  const producer = await openProducer(config);
  try {
    let state;
    if (action === 'pause') {
      const paused = await pauseJob(producer.redis, config.prefix, def.name, operator());
      state = jobSchedule(def, paused);
      process.stderr.write(
        `schedule of ${def.name} paused (by ${paused.by} since ${paused.since})\n`,
      );
    } else {
      const was = await resumeJob(producer.redis, config.prefix, def.name);
      state = jobSchedule(def, null);
      process.stderr.write(
        was
          ? `schedule of ${def.name} resumed${state.nextSlot ? `; next slot ${state.nextSlot}` : ''}\n`
          : `schedule of ${def.name} was not paused\n`,
      );
    }
    if (flags.json) process.stdout.write(`${JSON.stringify(state)}\n`);
    return ExitCode.ok;
  } finally {
    await producer.close();
  }
}
