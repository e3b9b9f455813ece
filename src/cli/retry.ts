/**
 * `crm-sync retry RUN`: runs the job of RUN again so that the rows it failed
 * or the platform rejected are tried again. The engine stores a record's
 * state only after a confirmed write, so a new run of the same job and source
 * plans exactly those rows again, plus whatever changed in the export since.
 * The new run is a run like any other (trigger `retry`, `retryOf` RUN), with
 * the original's source override and `full`/`force` options. Rows refused
 * before sending (invalid, conflicts) stay refused until the export is fixed.
 */
import type { Command } from 'commander';
import { RunJobData as RunJobDataSchema, type RunJobData } from '../engine/payloads.js';
import { checkSourceOverride, sourceLabel } from '../engine/source.js';
import { startWorkerService } from '../engine/service.js';
import { loadJob, type JobDefinition } from '../jobs/definition.js';
import { createShutdown } from '../ops/shutdown.js';
import { enqueueRun } from '../queue/queues.js';
import { stripCredentials } from '../state/redaction.js';
import type { RunRecord } from '../state/runs.js';
import { ExitCode } from './output.js';
import { watch } from './run.js';
import { cliRuntime, exitCodeOf, jobsOption, openProducer, TERMINAL } from './runtime.js';

interface RetryFlags {
  wait?: boolean;
  json?: boolean;
  withWorker?: boolean;
  jobs?: string;
  source?: string;
}

export const RETRY_HELP = `
What it does: enqueues a new run of the same job (trigger "retry"), reading
the same source as RUN (its --source override, if it had one) with the same
--full/--force options. crm-sync records a row as synced only after the
platform confirmed its write, so the new run plans exactly the rows RUN
failed or had rejected, plus anything that changed in the export since.
Rows refused before sending (invalid, conflict) are refused again until the
export is fixed. If a run of the job is already going, it attaches to it.`;

export function registerRetryCommand(program: Command): void {
  jobsOption(
    program
      .command('retry')
      .description('run the job of RUN again, so its failed and rejected rows are tried again')
      .argument('<run>', 'id of the run to retry (it must have ended)')
      .option(
        '--source <path-or-url>',
        "read this export instead (needed when RUN's source URL had credentials, which are never stored)",
      )
      .option('--wait', 'wait until the new run ends')
      .option('--json', 'print the new run as one JSON object')
      .option('--with-worker', 'also run the workers in this process')
      .addHelpText('after', RETRY_HELP),
  ).action(async (runId: string, flags: RetryFlags) => {
    process.exitCode = await retryCommand(runId, flags);
  });
}

async function retryCommand(originalId: string, flags: RetryFlags): Promise<number> {
  const { config, logger } = cliRuntime();
  const jobsDir = flags.jobs ?? config.jobsDir;
  const shutdown = createShutdown(logger, { deadlineMs: config.shutdownTimeoutMs });
  const producer = await openProducer(config);
  shutdown.register('producer', () => producer.close());
  try {
    const original = await producer.store.getRun(originalId);
    if (!original) {
      process.stderr.write(`crm-sync: no run ${originalId}\n`);
      return ExitCode.failed;
    }
    if (!TERMINAL.has(original.status)) {
      process.stderr.write(
        `crm-sync: run ${originalId} is still ${original.status}; retry it once it has ended\n`,
      );
      return ExitCode.failed;
    }
    const def = loadJob(jobsDir, original.job, { mappingsDir: config.mappingsDir });
    if (flags.source !== undefined) checkSourceOverride(flags.source);
    const data = retryRequest(original, def, flags.source);
    if (flags.withWorker) {
      shutdown.listen();
      await startWorkerService({ config, logger, shutdown, jobsDir });
    }
    const { runId, attached } = await enqueueRun(producer.runQueue, original.job, data);
    if (!attached) {
      const req = RunJobDataSchema.parse(data);
      // Created here (before a worker takes the job) so the record names the run it retries.
      await producer.store.createRun({
        id: runId,
        job: req.job,
        entity: def.entity,
        mode: req.mode ?? def.mode,
        source: sourceLabel(def, req),
        options: { full: req.full, force: req.force, trigger: 'retry', retryOf: originalId },
      });
    }
    if (!flags.json) {
      const c = original.counts;
      process.stderr.write(
        `${attached ? `attached to run ${runId} of ${original.job}, already going` : `enqueued run ${runId}`}` +
          ` (retry of ${originalId}: ${c.failed} failed, ${c.rejected} rejected)\n`,
      );
    }
    if (!(flags.wait || flags.withWorker)) {
      if (flags.json) {
        process.stdout.write(
          `${JSON.stringify({ runId, attached, status: 'queued', retryOf: originalId })}\n`,
        );
      } else process.stderr.write(`follow it with: crm-sync show ${runId} --wait\n`);
      return ExitCode.ok;
    }
    const summary = await watch(producer.store, runId, { wait: true, json: flags.json === true });
    return summary ? exitCodeOf(summary.status) : ExitCode.failed;
  } finally {
    await shutdown.shutdown('retry finished');
  }
}

/** A retry whose original source cannot be read again as stored. */
export class RetrySourceError extends Error {
  readonly code = 'cli.retry-source';
  constructor(runId: string, source: string) {
    super(
      `run ${runId} read ${source}, stored without its query or credentials: give the source again with --source`,
    );
    this.name = 'RetrySourceError';
  }
}

/**
 * The run request of a retry: the original's job, options and source
 * override. Run records hold sources as shown (a URL without its query or
 * credentials), so an override is recognised by comparing with the job's own
 * source shown the same way, and one that lost its query needs `--source`.
 */
export function retryRequest(run: RunRecord, def: JobDefinition, source?: string): RunJobData {
  let override = source;
  if (override === undefined && run.source !== stripCredentials(sourceLabel(def, {}))) {
    if (/REDACTED|…|%E2%80%A6|^\(/.test(run.source)) throw new RetrySourceError(run.id, run.source);
    override = run.source;
  }
  return {
    job: run.job,
    ...(override !== undefined && { source: override }),
    full: run.options.full === true,
    force: run.options.force === true,
    ...(run.mode !== def.mode && { mode: run.mode }),
    trigger: 'retry',
    retryOf: run.id,
  };
}
