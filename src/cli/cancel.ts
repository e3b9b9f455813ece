/**
 * `crm-sync cancel RUN`: asks a run that has not ended to cancel
 * (`cancelRun` in src/engine/run-service.ts): it sends nothing more, its
 * writes in flight settle, and it ends `cancelled` with its counts. A
 * cancelled run can be retried (`crm-sync retry RUN`).
 */
import type { Command } from 'commander';
import { ExitCode } from './output.js';

interface CancelFlags {
  json?: boolean;
}

export const CANCEL_HELP = `
What it does: marks RUN cancelled-on-request. A run no worker has taken yet
ends "cancelled" at once. Otherwise its worker stops it: planning stops, no
write is sent after the cancel, the writes already sent settle (a finalizing
run stops verifying its creates), and the run ends "cancelled" with its
counts as they stand (follow it with crm-sync show RUN --wait). Exit 0 when
the cancel is taken; 1 when RUN has ended, is completing (every write settled
and verified: it ends completed) or there is no such run. crm-sync retry RUN
later writes what it did not.`;

export function registerCancelCommand(program: Command): void {
  program
    .command('cancel')
    .description('cancel a run that has not ended: nothing more is sent, it ends cancelled')
    .argument('<run>', 'id of the run to cancel')
    .option('--json', 'print {runId, status} as one JSON object')
    .addHelpText('after', CANCEL_HELP)
    .action(async (runId: string, flags: CancelFlags) => {
      process.exitCode = await cancelCommand(runId, flags);
    });
}

async function cancelCommand(runId: string, flags: CancelFlags): Promise<number> {
  const { cliRuntime, openProducer } = await import('./runtime.js');
  const { cancelRun, NoSuchRunError, RunCompletingError, RunEndedError } =
    await import('../engine/run-service.js');
  const { config, logger } = cliRuntime();
  const producer = await openProducer(config, logger);
  try {
    let cancelled;
    try {
      cancelled = await cancelRun(producer, runId);
    } catch (err) {
      if (!(
        err instanceof NoSuchRunError ||
        err instanceof RunEndedError ||
        err instanceof RunCompletingError
      ))
        throw err;
      process.stderr.write(`crm-sync: ${err.message}\n`);
      return ExitCode.failed;
    }
    if (flags.json) process.stdout.write(`${JSON.stringify(cancelled)}\n`);
    else if (cancelled.status === 'cancelled')
      process.stderr.write(`run ${runId} cancelled before a worker took it\n`);
    else
      process.stderr.write(
        `cancelling run ${runId} (${cancelled.status}): it ends cancelled once its writes in flight have settled\n` +
          `follow it with: crm-sync show ${runId} --wait\n`,
      );
    return ExitCode.ok;
  } finally {
    await producer.close();
  }
}
