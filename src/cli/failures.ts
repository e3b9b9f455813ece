/**
 * `crm-sync failures RUN [--kind K]`: the rows of a run that were not synced
 * (invalid, conflict, duplicate, rejected, unsupported, failed), the rows a skip rule
 * left out (skipped) and the fields left out of synced rows or the rows read
 * as windows-1252 (warning), with
 * line, kind, field, reason and value. Pages through Redis, where they are
 * kept complete, and writes as it reads: a run with 100,000 bad rows never
 * sits in memory whole.
 */
import { Option, type Command } from 'commander';
import { FAILURE_KINDS, type FailureKind } from '../state/failure-kinds.js';
import type { FailureRow } from '../state/runs.js';
import { integerOption } from './options.js';
import { formatTable, type Column } from './table.js';

interface FailuresFlags {
  json?: boolean;
  csv?: boolean;
  limit?: number;
  offset: number;
  kind?: FailureKind;
}

export function registerFailuresCommand(program: Command): void {
  program
    .command('failures')
    .description('list the rows of a run that were not synced, with the reason for each')
    .argument('<run>', 'run id')
    .option('--json', 'print one JSON array of failure rows')
    .option('--csv', 'print RFC 4180 CSV (formula-safe cells, for spreadsheets)')
    .option('--limit <N>', 'at most this many rows (default: all)', integerOption('--limit', 1))
    .option('--offset <N>', 'skip this many rows first', integerOption('--offset', 0), 0)
    .addOption(
      new Option('--kind <kind>', 'only the rows of this kind').choices(
        FAILURE_KINDS as readonly string[] as string[],
      ),
    )
    .action(async (runId: string, flags: FailuresFlags, command: Command) => {
      if (flags.json && flags.csv) {
        command.error('error: give --json or --csv, not both', {
          exitCode: 2,
          code: 'crm-sync.usage',
        });
      }
      const { cliRuntime, openProducer } = await import('./runtime.js');
      const { failurePages, printCsv } = await import('../engine/run-failures.js');
      const { config } = cliRuntime();
      const producer = await openProducer(config);
      try {
        const run = await producer.store.runs.get(runId);
        if (!run) {
          process.stderr.write(`crm-sync: no run ${runId}\n`);
          process.exitCode = 1;
          return;
        }
        const rows = failurePages(producer.store, runId, flags.offset, flags.limit, flags.kind);
        const out = (s: string) => write(s);
        if (flags.json) await printJson(rows, out);
        else if (flags.csv) await printCsv(rows, out);
        else if (flags.kind) {
          const listed = await printTable(rows, out);
          process.stderr.write(
            `run ${runId} (${run.job}): ${listed} row(s) of kind ${flags.kind}\n`,
          );
        } else {
          const total = await producer.store.runs.countFailures(runId);
          process.stderr.write(
            `run ${runId} (${run.job}): ${total} row(s) not synced, skipped, or synced with a warning\n`,
          );
          await printTable(rows, out);
        }
      } finally {
        await producer.close();
      }
    });
}

/** Writes to stdout, waiting when the pipe is full (a pager reading slowly). */
function write(text: string): Promise<void> {
  // A reader that stops early (`| head`) closes the pipe: that ends the listing, quietly.
  if (process.stdout.listenerCount('error') === 0) {
    process.stdout.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE') process.exit(0);
      process.stderr.write(`crm-sync: cannot write the listing (${err.code ?? err.message})\n`);
      process.exit(1);
    });
  }
  return new Promise((resolve, reject) => {
    const ok = process.stdout.write(text, (err) => (err ? reject(err) : undefined));
    if (ok) resolve();
    else process.stdout.once('drain', resolve);
  });
}

type Out = (text: string) => Promise<void>;

export async function printJson(rows: AsyncIterable<FailureRow[]>, out: Out): Promise<void> {
  let first = true;
  await out('[');
  for await (const page of rows) {
    await out((first ? '' : ',') + page.map((r) => JSON.stringify(r)).join(','));
    first = false;
  }
  await out(']\n');
}

const COLUMNS: Column[] = [
  { header: 'LINE', align: 'right' },
  { header: 'KIND' },
  { header: 'FIELD', maxWidth: 24 },
  { header: 'REASON', maxWidth: 80 },
  { header: 'VALUE', maxWidth: 40 },
  // The identity key a conflict or duplicate shares; any other row's first.
  { header: 'IDENTITY', maxWidth: 48 },
  // Which CRM record the row is (its strongest identity key), where known.
  { header: 'RECORD', maxWidth: 48 },
];

/** A table per page: columns are as wide as each page needs. Returns how many rows it printed. */
export async function printTable(rows: AsyncIterable<FailureRow[]>, out: Out): Promise<number> {
  const { recordOf } = await import('../engine/run-failures.js');
  let header = true;
  let count = 0;
  for await (const page of rows) {
    const table = formatTable(
      COLUMNS,
      page.map((r) => [
        String(r.line),
        r.kind,
        r.field ?? '',
        r.reason,
        r.value === undefined ? '' : JSON.stringify(r.value),
        r.identity ?? '',
        recordOf(r) ?? '',
      ]),
    );
    await out(`${header ? table : table.slice(table.indexOf('\n') + 1)}\n`);
    header = false;
    count += page.length;
  }
  return count;
}
