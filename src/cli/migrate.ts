/**
 * `crm-sync migrate [--abandon-runs] [--workers-stopped] [--json]`: brings
 * the Redis state under the prefix to this release's layout
 * (src/state/migrations.ts). Refused, with what to do, while workers of
 * another release are connected or runs they started have not ended; safe to
 * run again, and a no-op on state already at this layout.
 */
import type { Command } from 'commander';
import type { Queue } from 'bullmq';
import type { MigrateReport } from '../state/migrations.js';

interface MigrateFlags {
  abandonRuns?: boolean;
  workersStopped?: boolean;
  json?: boolean;
}

export function registerMigrateCommand(program: Command): void {
  program
    .command('migrate')
    .description(
      "bring the Redis state to this release's layout (stop the older release's workers first)",
    )
    .option(
      '--abandon-runs',
      'mark runs that the older release started and did not end as failed, instead of refusing',
    )
    .option(
      '--workers-stopped',
      'skip the check for connected workers (for a Redis that does not list its clients)',
    )
    .option('--json', 'print the report as one JSON object')
    .action(async (flags: MigrateFlags) => {
      const { cliRuntime, openProducer } = await import('./runtime.js');
      const { createWriteQueue } = await import('../queue/queues.js');
      const { otherWorkers } = await import('../queue/worker-layout.js');
      const { migrate } = await import('../state/migrations.js');
      const { config } = cliRuntime();
      const producer = await openProducer(config);
      const writeQueue = createWriteQueue({ connection: producer.redis, prefix: config.prefix });
      try {
        const report = await migrate(producer.redis, {
          prefix: config.prefix,
          otherWorkers: () => otherWorkers([producer.runQueue as Queue, writeQueue as Queue]),
          workersStopped: flags.workersStopped === true,
          abandonRuns: flags.abandonRuns === true,
        });
        process.stdout.write(
          flags.json ? `${JSON.stringify(report)}\n` : `${formatReport(report, config.prefix)}\n`,
        );
      } finally {
        await writeQueue.close();
        await producer.close();
      }
    });
}

export function formatReport(r: MigrateReport, prefix: string): string {
  if (r.outcome === 'none') return `no state under ${prefix} yet: nothing to migrate`;
  if (r.outcome === 'current') return `state under ${prefix} is at layout ${r.to}: nothing to do`;
  const lines = [`state under ${prefix} migrated from layout ${r.from} to ${r.to}`];
  for (const s of r.steps) {
    const counts = Object.entries(s.counts)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ');
    lines.push(`  to ${s.to}: ${s.what} (${counts})`);
  }
  if (r.abandonedRuns.length > 0) {
    lines.push(`  runs of the older release marked failed: ${r.abandonedRuns.join(', ')}`);
  }
  return lines.join('\n');
}
