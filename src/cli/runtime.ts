/**
 * What CLI commands share: configuration and logger, a producer connection
 * that fails fast when Redis is down, the state store and the runs queue, and
 * how a run summary (src/engine/run-summary.ts) is printed in a few human
 * lines. Commands load it in their actions (docs/ARCHITECTURE.md, "Layers and
 * imports"): it brings the library, which `--help` does not need.
 */
import type { RedisClient } from '../redis/connection.js';
import { loadConfig, type Config } from '../config.js';
import type { RunJobData } from '../engine/payloads.js';
import type { RunSummary } from '../engine/run-summary.js';
import { createLogger, type Logger } from '../log.js';
import { closeRedis, connectProducer } from '../redis/connection.js';
import { createRunQueue, type TypedQueue } from '../queue/queues.js';
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
  redis: RedisClient;
  store: StateStore;
  runQueue: TypedQueue<RunJobData>;
  close(): Promise<void>;
}

/**
 * A fast-failing connection for commands that only read state or enqueue;
 * `logger` hears what the store recovers from on its own (a failed prune).
 */
export async function openProducer(config: Config, logger?: Logger): Promise<Producer> {
  const redis = await connectProducer(config.redis);
  const runQueue = createRunQueue<RunJobData>({
    connection: redis,
    prefix: config.prefix,
    keepRuns: config.runHistory,
  });
  return {
    redis,
    store: new StateStore(redis, {
      prefix: config.prefix,
      runHistory: config.runHistory,
      ...(logger && { logger }),
    }),
    runQueue,
    async close() {
      await runQueue.close();
      await closeRedis(redis);
    },
  };
}

/** A run summary in a few human lines (what `show` prints without --json). */
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
      `  warnings ${c.warnings}: optional fields left out of synced rows, rows decoded as windows-1252 (crm-sync failures ${s.runId} --kind warning)`,
    );
  }
  if (s.error) lines.push(`  ${s.status === 'stopped' ? 'stopped' : 'error'}: ${s.error}`);
  if (s.status === 'cancelled')
    lines.push(`  cancelled; what it did not write: crm-sync retry ${s.runId}`);
  const bad = c.invalid + c.conflict + c.rejected + c.failed + c.unsupported;
  if (bad > 0) lines.push(`  rows not synced, with reasons: crm-sync failures ${s.runId}`);
  if (c.skipped > 0) {
    lines.push(
      `  rows a skip rule matched, with reasons: crm-sync failures ${s.runId} --kind skipped`,
    );
  }
  return lines.join('\n');
}
