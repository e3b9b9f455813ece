/**
 * What CLI commands share: configuration and logger, a producer connection
 * that fails fast when Redis is down, the state store and the runs queue, and
 * how a run is shown (one JSON object, or a few human lines).
 */
import type { Command } from 'commander';
import type { Redis } from 'ioredis';
import { loadConfig, type Config } from '../config.js';
import type { RunJobData } from '../engine/payloads.js';
import { createLogger, type Logger } from '../log.js';
import { closeRedis, connectProducer } from '../queue/connection.js';
import { createRunQueue, type TypedQueue } from '../queue/queues.js';
import type { RunRecord } from '../state/runs.js';
import { StateStore } from '../state/store.js';

export interface CliRuntime {
  config: Config;
  logger: Logger;
}

export function cliRuntime(): CliRuntime {
  const config = loadConfig();
  return { config, logger: createLogger({ level: config.logLevel }) };
}

export interface Producer {
  redis: Redis;
  store: StateStore;
  runQueue: TypedQueue<RunJobData>;
  close(): Promise<void>;
}

/** A fast-failing connection for commands that only read state or enqueue. */
export async function openProducer(config: Config): Promise<Producer> {
  const redis = await connectProducer(config.redisUrl);
  const runQueue = createRunQueue<RunJobData>({ connection: redis, prefix: config.prefix });
  return {
    redis,
    store: new StateStore(redis, { prefix: config.prefix }),
    runQueue,
    async close() {
      await runQueue.close();
      await closeRedis(redis);
    },
  };
}

/** The `--jobs DIR` option, shared by the commands that read job definitions. */
export function jobsOption(cmd: Command): Command {
  return cmd.option(
    '--jobs <dir>',
    'folder of job definitions (default: CRM_SYNC_JOBS_DIR or ./jobs)',
  );
}

/** The run as `--json` prints it: a stable shape that scripts rely on (docs/CLI.md). */
export interface RunSummary {
  runId: string;
  job: string;
  status: string;
  phase?: string;
  error?: string;
  source: string;
  mode: string;
  counts: {
    read: number;
    created: number;
    updated: number;
    unchanged: number;
    adopted: number;
    invalid: number;
    conflict: number;
    rejected: number;
    failed: number;
    skipped: number;
    unsupported: number;
    /** Optional fields left out of rows that were synced (one per field): `failures RUN --kind warning`. */
    warnings: number;
    orphans: number;
    writesPlanned: number;
    writesSettled: number;
  };
  createdAt: string;
  startedAt?: string;
  finishedAt?: string;
  durationMs?: number;
}

export function summaryOf(run: RunRecord): RunSummary {
  const c = run.counts;
  const iso = (ms: number | undefined) =>
    ms === undefined ? undefined : new Date(ms).toISOString();
  return {
    runId: run.id,
    job: run.job,
    status: run.status,
    ...(run.phase !== undefined && { phase: run.phase }),
    ...(run.error !== undefined && { error: run.error }),
    source: run.source,
    mode: run.mode,
    counts: {
      read: c.read,
      created: c.created,
      updated: c.updated,
      unchanged: c.unchanged,
      adopted: c.adopted,
      invalid: c.invalid,
      conflict: c.conflict,
      rejected: c.rejected,
      failed: c.failed,
      skipped: c.skipped,
      unsupported: c.unsupported,
      warnings: c.warnings,
      orphans: c.orphans,
      writesPlanned: c.writesPlanned,
      writesSettled: c.writesSettled,
    },
    createdAt: iso(run.createdAt)!,
    ...(run.startedAt !== undefined && { startedAt: iso(run.startedAt) }),
    ...(run.finishedAt !== undefined && { finishedAt: iso(run.finishedAt) }),
    ...(run.finishedAt !== undefined && {
      durationMs: run.finishedAt - (run.startedAt ?? run.createdAt),
    }),
  };
}

export function formatSummary(s: RunSummary): string {
  const c = s.counts;
  const lines = [
    `run ${s.runId} (${s.job}): ${s.status}${s.phase && s.status !== 'completed' ? ` — ${s.phase}` : ''}`,
    `  source ${s.source}, mode ${s.mode}${s.durationMs !== undefined ? `, ${(s.durationMs / 1000).toFixed(1)} s` : ''}`,
    `  read ${c.read}: created ${c.created}, updated ${c.updated}, unchanged ${c.unchanged}, adopted ${c.adopted}, ` +
      `invalid ${c.invalid}, conflict ${c.conflict}, rejected ${c.rejected}, failed ${c.failed}, skipped ${c.skipped}` +
      (c.unsupported ? `, unsupported ${c.unsupported}` : '') +
      (c.orphans ? `, orphans ${c.orphans}` : ''),
  ];
  if (c.warnings > 0) {
    lines.push(
      `  warnings ${c.warnings}: optional fields left out of synced rows (crm-sync failures ${s.runId} --kind warning)`,
    );
  }
  if (s.error) lines.push(`  ${s.status === 'stopped' ? 'stopped' : 'error'}: ${s.error}`);
  const bad = c.invalid + c.conflict + c.rejected + c.failed + c.unsupported;
  if (bad > 0) lines.push(`  rows not synced, with reasons: crm-sync failures ${s.runId}`);
  if (c.skipped > 0) {
    lines.push(
      `  rows a skip rule matched, with reasons: crm-sync failures ${s.runId} --kind skipped`,
    );
  }
  return lines.join('\n');
}

export const TERMINAL = new Set(['completed', 'failed', 'stopped']);

/** Exit code for a finished run: 0 completed, 1 failed, 5 stopped by a threshold. */
export function exitCodeOf(status: string): number {
  if (status === 'completed') return 0;
  if (status === 'stopped') return 5;
  return 1;
}
