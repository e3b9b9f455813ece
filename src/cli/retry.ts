/**
 * `crm-sync retry RUN`: runs the job of RUN again so that the rows it failed
 * or the platform rejected are tried again (`retryRun` in
 * src/engine/run-service.ts says how). The new run is a run like any other
 * (trigger `retry`, `retryOf` RUN), with the original's source override and
 * `full`/`force` options.
 */
import type { Command } from 'commander';
import type { PreparedRetry } from '../engine/run-service.js';
import { jobsOption } from './options.js';
import { ExitCode, exitCodeOf } from './output.js';
import { watch } from './run.js';

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
  const { cliRuntime, openProducer } = await import('./runtime.js');
  const { jobLoader, NoSuchRunError, prepareRetry, RunNotEndedError, submitRun } =
    await import('../engine/run-service.js');
  const { startWorkerService } = await import('../engine/worker-service.js');
  const { createShutdown } = await import('../ops/shutdown.js');
  const { config, logger } = cliRuntime();
  const jobsDir = flags.jobs ?? config.jobsDir;
  const shutdown = createShutdown(logger, { deadlineMs: config.shutdownTimeoutMs });
  const producer = await openProducer(config, logger);
  shutdown.register('producer', () => producer.close());
  try {
    let retry: PreparedRetry;
    try {
      retry = await prepareRetry(
        { store: producer.store, loadJob: jobLoader(config, jobsDir) },
        originalId,
        { ...(flags.source !== undefined && { source: flags.source }) },
      );
    } catch (err) {
      if (!(err instanceof NoSuchRunError || err instanceof RunNotEndedError)) throw err;
      process.stderr.write(`crm-sync: ${err.message}\n`);
      return ExitCode.failed;
    }
    if (flags.withWorker) {
      shutdown.listen();
      await startWorkerService({ config, logger, shutdown, jobsDir });
    }
    const { runId, attached } = await submitRun(producer, retry);
    if (!flags.json) {
      const c = retry.original.counts;
      process.stderr.write(
        `${attached ? `attached to run ${runId} of ${retry.original.job}, already going` : `enqueued run ${runId}`}` +
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
    const summary = await watch(producer.store, runId, {
      wait: true,
      json: flags.json === true,
      prefix: config.prefix,
    });
    return summary ? exitCodeOf(summary.status) : ExitCode.failed;
  } finally {
    await shutdown.shutdown('retry finished');
  }
}
