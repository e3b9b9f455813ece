/**
 * `crm-sync runs [--job J] [--limit N] [--json]`: the run history, newest
 * first, as an aligned table or as one JSON array of run summaries (the
 * shape `show --json` prints).
 */
import type { Command } from 'commander';
import type { RunRecord } from '../state/runs.js';
import { integerOption } from './options.js';
import { formatDuration, formatTable, formatTime, type Column } from './table.js';

interface RunsFlags {
  job?: string;
  limit: number;
  json?: boolean;
}

export function registerRunsCommand(program: Command): void {
  program
    .command('runs')
    .description('list recent runs, newest first')
    .option('--job <name>', 'only the runs of this job definition')
    .option('--limit <N>', 'how many runs to list', integerOption('--limit', 1), 20)
    .option('--json', 'print one JSON array of run summaries')
    .action(async (flags: RunsFlags) => {
      const { cliRuntime, openProducer } = await import('./runtime.js');
      const { runSummary } = await import('../engine/run-summary.js');
      const { config } = cliRuntime();
      const producer = await openProducer(config);
      try {
        const runs = await producer.store.runs.list({
          ...(flags.job !== undefined && { job: flags.job }),
          limit: flags.limit,
        });
        if (flags.json) {
          process.stdout.write(`${JSON.stringify(runs.map(runSummary))}\n`);
        } else if (runs.length === 0) {
          process.stderr.write(`no runs${flags.job ? ` of ${flags.job}` : ''} yet\n`);
        } else {
          process.stdout.write(`${formatRuns(runs, Date.now())}\n`);
        }
      } finally {
        await producer.close();
      }
    });
}

const COUNTS = [
  'read',
  'created',
  'updated',
  'unchanged',
  'invalid',
  'rejected',
  'failed',
] as const;

const COLUMNS: Column[] = [
  { header: 'RUN' },
  { header: 'JOB' },
  { header: 'STATUS' },
  ...COUNTS.map((c) => ({ header: c.toUpperCase(), align: 'right' as const })),
  { header: 'STARTED' },
  { header: 'DURATION', align: 'right' },
];

/** The history table; a run still going shows how long it has been going, marked with "+". */
export function formatRuns(runs: readonly RunRecord[], now: number): string {
  return formatTable(
    COLUMNS,
    runs.map((r) => {
      const start = r.startedAt ?? r.createdAt;
      const duration =
        r.finishedAt !== undefined
          ? formatDuration(r.finishedAt - start)
          : r.status === 'queued'
            ? '-'
            : `${formatDuration(now - start)}+`;
      return [
        r.id,
        r.job,
        r.status,
        ...COUNTS.map((c) => String(r.counts[c])),
        formatTime(start),
        duration,
      ];
    }),
  );
}
