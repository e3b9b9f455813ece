/**
 * `crm-sync run JOB`, `crm-sync show RUN` and `crm-sync plan JOB`: enqueue a
 * run (or attach to the one going), wait for it with a progress bar, print
 * it; or plan without writing anything.
 */
import type { SingleBar } from 'cli-progress';
import { Option, type Command } from 'commander';
import type { RowWarning } from '../engine/plan-pass.js';
import type { RunSummary } from '../engine/run-summary.js';
import type { StateStore } from '../state/store.js';
import { MODES, recordName, type Action, type Mode } from '../sync/action.js';
import { jobsOption } from './options.js';
import { exitCodeOf } from './output.js';

interface RunFlags {
  source?: string;
  full?: boolean;
  dryRun?: boolean;
  force?: boolean;
  wait?: boolean;
  json?: boolean;
  withWorker?: boolean;
  jobs?: string;
  mode?: Mode;
}

export function registerRunCommands(program: Command): void {
  jobsOption(
    program
      .command('run')
      .description('enqueue a run of a job definition (or attach to the one going)')
      .argument('<job>', 'job definition name (file name in the jobs folder, without .yaml)')
      .option('--source <path-or-url>', "read this export instead of the job's source")
      .option('--full', 'list the platform again and re-plan every record')
      .option('--dry-run', 'plan only: print what would change, write nothing anywhere')
      .option('--force', 'write even when a safety threshold trips')
      .addOption(new Option('--mode <mode>', "overrides the job's mode").choices(MODES as Mode[]))
      .option('--wait', 'wait until the run ends (progress bar on a terminal)')
      .option('--json', 'print the run summary as one JSON object')
      .option(
        '--with-worker',
        'also run the workers in this process (one command does a whole sync)',
      ),
  ).action(async (job: string, flags: RunFlags) => {
    process.exitCode = flags.dryRun ? await planCommand(job, flags) : await runCommand(job, flags);
  });

  jobsOption(
    program
      .command('plan')
      .description(
        'dry run: what a run of JOB would create and update, with field diffs; writes nothing',
      )
      .argument('<job>', 'job definition name')
      .option('--source <path-or-url>', "read this export instead of the job's source")
      .option('--full', 'list the platform again instead of using the stored index')
      .option('--json', 'print the plan as one JSON object'),
  ).action(async (job: string, flags: RunFlags) => {
    process.exitCode = await planCommand(job, flags);
  });

  program
    .command('show')
    .description('print one run')
    .argument('<run>', 'run id')
    .option('--wait', 'wait until the run ends')
    .option('--json', 'print the run summary as one JSON object')
    .action(async (runId: string, flags: { wait?: boolean; json?: boolean }) => {
      const { cliRuntime, openProducer } = await import('./runtime.js');
      const { config } = cliRuntime();
      const producer = await openProducer(config);
      try {
        const summary = await watch(producer.store, runId, { ...flags, prefix: config.prefix });
        process.exitCode = summary ? (flags.wait ? exitCodeOf(summary.status) : 0) : 1;
      } finally {
        await producer.close();
      }
    });
}

async function runCommand(jobName: string, flags: RunFlags): Promise<number> {
  const { cliRuntime, openProducer } = await import('./runtime.js');
  const { jobLoader, prepareRun, submitRun } = await import('../engine/run-service.js');
  const { createShutdown } = await import('../ops/shutdown.js');
  const { config, logger } = cliRuntime();
  const jobsDir = flags.jobs ?? config.jobsDir;
  // Refuse a job that cannot run, or a --source with a credential, before anything starts.
  const run = prepareRun({ loadJob: jobLoader(config, jobsDir) }, jobName, {
    ...(flags.source !== undefined && { source: flags.source }),
    full: flags.full === true,
    force: flags.force === true,
    ...(flags.mode !== undefined && { mode: flags.mode }),
    trigger: 'cli',
  });

  const shutdown = createShutdown(logger, { deadlineMs: config.shutdownTimeoutMs });
  if (flags.withWorker) {
    shutdown.listen();
    const { startWorkerService } = await import('../engine/worker-service.js');
    await startWorkerService({ config, logger, shutdown, jobsDir });
  }
  const producer = await openProducer(config, logger);
  shutdown.register('producer', () => producer.close());
  try {
    const { runId, attached } = await submitRun(producer, run);
    if (!flags.json) {
      process.stderr.write(
        attached ? `attached to run ${runId}, already going\n` : `enqueued run ${runId}\n`,
      );
    }
    const wait = flags.wait === true || flags.withWorker === true;
    if (!wait) {
      if (flags.json)
        process.stdout.write(`${JSON.stringify({ runId, attached, status: 'queued' })}\n`);
      else process.stderr.write(`follow it with: crm-sync show ${runId} --wait\n`);
      return 0;
    }
    const summary = await watch(producer.store, runId, {
      wait: true,
      json: flags.json === true,
      prefix: config.prefix,
    });
    return summary ? exitCodeOf(summary.status) : 1;
  } finally {
    await shutdown.shutdown('run finished');
  }
}

/** Prints a run, first waiting for its end when asked; null when there is no such run. */
export async function watch(
  store: StateStore,
  runId: string,
  flags: { wait?: boolean; json?: boolean; prefix: string },
): Promise<RunSummary | null> {
  const { SingleBar } = await import('cli-progress');
  const { formatSummary } = await import('./runtime.js');
  const { runSummary, waitForRun } = await import('../engine/run-summary.js');
  const { describeRate, readPacerState } = await import('../queue/pacer-store.js');
  const { watchRunEnd } = await import('../queue/run-end-watch.js');
  let bar: SingleBar | undefined;
  // Woken by the run job's end, not only at the next read of its record (which is all there
  // is when the events stream cannot be read).
  const ends = flags.wait
    ? await watchRunEnd(store.connection, flags.prefix, runId).catch(() => undefined)
    : undefined;
  const run = flags.wait
    ? await waitForRun(store, runId, {
        ...(ends && { wake: (ms: number) => ends.wait(ms) }),
        onPoll: (r) => {
          if (!bar && process.stderr.isTTY && !flags.json) {
            bar = new SingleBar({
              format: ' {status} |{bar}| {value}/{total} writes | read {read} | {phase}',
              hideCursor: true,
            });
            bar.start(0, 0, { status: r.status, read: 0, phase: '' });
          }
          bar?.setTotal(r.counts.writesPlanned);
          bar?.update(r.counts.writesSettled, {
            status: r.status,
            read: r.counts.read,
            phase: r.phase ?? '',
          });
        },
      }).finally(() => ends?.close())
    : await store.runs.get(runId);
  bar?.stop();
  if (!run) {
    process.stderr.write(`crm-sync: no run ${runId}\n`);
    return null;
  }
  const summary = runSummary(run);
  process.stdout.write(flags.json ? `${JSON.stringify(summary)}\n` : `${formatSummary(summary)}\n`);
  if (!flags.json) {
    // The rate the workers share (learned with PLATFORM_RATE_LIMIT=auto), beside the run it paced.
    const rate = await readPacerState(store.connection, flags.prefix).catch(() => undefined);
    process.stderr.write(`${describeRate(rate)}\n`);
  }
  return summary;
}

async function planCommand(jobName: string, flags: RunFlags): Promise<number> {
  const { cliRuntime, openProducer } = await import('./runtime.js');
  const { pacedClient } = await import('./paced-client.js');
  const { requirePlatform } = await import('../config.js');
  const { coverageWarnings, unmatchedPaths } = await import('../crm/path-coverage.js');
  const { jobLoader } = await import('../engine/run-service.js');
  const { planJob, planOutcomes } = await import('../engine/dry-run.js');
  const { config, logger } = cliRuntime();
  requirePlatform(config);
  const loadJob = jobLoader(config, flags.jobs);
  const def = loadJob(jobName);
  const producer = await openProducer(config);
  const { client, close: closeClient } = pacedClient(config, producer, logger);
  try {
    // --json streams every action as it is planned: a 1M-row plan is never one string.
    const out = flags.json ? new JsonPlanWriter(jobName) : undefined;
    const result = await planJob(
      { store: producer.store, client, logger, loadJob, sourceEnv: config.sourceEnv },
      def,
      {
        ...(flags.source !== undefined && { source: flags.source }),
        full: flags.full === true,
        ...(flags.mode !== undefined && { mode: flags.mode }),
      },
      { ...(out && { onActions: (actions: readonly Action[]) => out.actions(actions) }) },
    );
    if (out) {
      out.end({
        counts: planOutcomes(result.counts),
        warnings: result.warnings,
        ...(result.paths && { unmatchedPaths: unmatchedPaths(result.paths) }),
      });
    } else {
      // Mapped paths that found nothing in the first rows: typos, or the wrong shape.
      for (const w of result.paths ? coverageWarnings(result.paths) : [])
        process.stderr.write(`warning: ${w}\n`);
      process.stdout.write(
        `${formatPlan(jobName, result.counts, result.actions, result.warnings)}\n`,
      );
    }
    return 0;
  } finally {
    closeClient();
    await producer.close();
  }
}

/**
 * `plan --json`: one JSON object, written as it goes. `actions` comes first
 * and holds every row's action (a later conflict of the same line replaces
 * the earlier one); the counts follow once the export is read.
 */
class JsonPlanWriter {
  private first = true;

  constructor(job: string) {
    const head = JSON.stringify({ runId: null, job, status: 'dry-run' });
    process.stdout.write(`${head.slice(0, -1)},"actions":[`);
  }

  actions(actions: readonly Action[]): void {
    if (actions.length === 0) return;
    const text = actions.map((a) => JSON.stringify(a)).join(',');
    process.stdout.write(this.first ? text : `,${text}`);
    this.first = false;
  }

  end(rest: Record<string, unknown>): void {
    const tail = JSON.stringify(rest);
    process.stdout.write(`]${tail === '{}' ? '}' : `,${tail.slice(1)}`}\n`);
  }
}

/**
 * A value of the export in a plan line, in JSON notation as `failures` shows
 * it: text quoted, a JSON `false` or `0` bare, so neither looks like the other.
 */
function shownValue(value: unknown): string {
  return value === undefined ? '' : `: ${JSON.stringify(value)}`;
}

function formatPlan(
  job: string,
  c: Record<string, number>,
  actions: Action[],
  warnings: RowWarning[],
): string {
  const lines = [
    `plan of ${job} (dry run, nothing written): read ${c.read}: would create ${c.create}, update ${c.update}; ` +
      `unchanged ${c.unchanged}, adopt ${c.adopt}, invalid ${c.invalid}, conflict ${c.conflict}, ` +
      (c.duplicate ? `duplicate ${c.duplicate}, ` : '') +
      `skip ${c.skip}, unsupported ${c.unsupported}` +
      (c.warnings
        ? `; warnings ${c.warnings} (fields left out, rows decoded as windows-1252)`
        : ''),
  ];
  for (const a of actions.slice(0, 50)) {
    if (a.kind === 'update' || a.kind === 'unsupported') {
      const diff = (a.changes ?? [])
        .map((ch) => `${ch.field}: ${JSON.stringify(ch.from)} → ${JSON.stringify(ch.to)}`)
        .join('; ');
      const record = a.keys[0] === undefined ? '' : ` ${recordName(a.keys[0])}`;
      lines.push(`  line ${a.line} ${a.kind}${record} #${a.platformId}${diff ? `: ${diff}` : ''}`);
    } else if (a.kind === 'create') lines.push(`  line ${a.line} create ${a.keys[0]}`);
    else if (a.kind === 'invalid')
      lines.push(
        `  line ${a.line} invalid ${a.field ?? ''}: ${a.reason}${shownValue(a.value)}${a.identity ? ` (${a.identity})` : ''}`,
      );
    else if (a.kind === 'conflict')
      lines.push(
        `  line ${a.line} conflict${a.keys[0] ? ` ${recordName(a.keys[0])}` : ''}: ${a.reason}`,
      );
    else if (a.kind === 'duplicate')
      lines.push(`  line ${a.line} duplicate ${recordName(a.record)}: ${a.reason}`);
    else if (a.kind === 'skip' && a.rule !== undefined)
      lines.push(`  line ${a.line} skip (${a.rule}): ${a.reason}`);
  }
  for (const w of warnings.slice(0, 50)) {
    const value = w.value === undefined ? '' : ` (${JSON.stringify(w.value)})`;
    lines.push(`  line ${w.line} warning ${w.field}: ${w.reason}${value}; the field is left out`);
  }
  if (actions.length > 50) lines.push(`  … ${actions.length - 50} more (use --json for all)`);
  return lines.join('\n');
}
