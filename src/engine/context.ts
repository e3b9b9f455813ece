/**
 * What the engine's processors need, built once per process: the state
 * store, the platform client, the write queue, the job definitions and the
 * settings that bound a run.
 */
import { RETRY_DEFAULTS } from '../config.js';
import type { SourceEnv } from '../crm/source.js';
import { DEFAULT_RATE_LIMIT, DEFAULT_WORKER_LOCK_MS } from '../defaults.js';
import type { JobDefinition } from '../jobs/definition.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../ops/metrics.js';
import type { PlatformClient } from '../platform/client.js';
import type { RetrySettings } from '../platform/retry-policy.js';
import type { KnownLimit } from '../queue/pacer.js';
import type { TypedQueue } from '../queue/queues.js';
import type { StateStore } from '../state/store.js';
import { DEFAULT_WRITE_CHUNK, type WriteChunkData } from './payloads.js';
import { PLANNING_BATCH_ROWS } from './plan-pass.js';
import type { WriteSlots } from './write-slots.js';
import type { RunRecord } from '../state/runs.js';

export interface EngineSettings {
  /** Rows per planning batch (src/engine/plan-pass.ts says why PLANNING_BATCH_ROWS). */
  batchSize: number;
  /**
   * A run waits before enqueueing more while this many of its own writes are
   * waiting (in chunks); fewer while `auto` has learned no limit (`waitingBound`).
   */
  maxWaitingWrites: number;
  /** Planned writes per `platform-writes` job at most (fewer at a low limit: `chunkSize`, src/queue/limiter.ts). */
  writeChunk: number;
  /** How often a run waiting for its writes checks on them (ms). */
  pollMs: number;
  /** Rounds of "verify pending creates, create again what is missing" before giving up. */
  maxCreateRounds: number;
  /** The retry policy's numbers (config's `retry`; src/platform/retry-policy.ts). */
  retry: RetrySettings;
  /** Requests per second to the platform, the ceiling for listing too. */
  rateLimit: number;
  /** The write worker's job lock (WORKER_LOCK_MS): a create renews it just before sending. */
  lockMs: number;
}

export const DEFAULT_ENGINE_SETTINGS: EngineSettings = {
  batchSize: PLANNING_BATCH_ROWS,
  maxWaitingWrites: 5_000,
  writeChunk: DEFAULT_WRITE_CHUNK,
  pollMs: 500,
  // Each round resends only the creates still unconfirmed, one listing each: at
  // 20% 503s (an unknown outcome every time) 5 rounds left a row of 2,000
  // unconfirmed in about one run of eight (2,000 × 0.2^6); 10 make it 0.2^11.
  maxCreateRounds: 10,
  retry: RETRY_DEFAULTS,
  rateLimit: DEFAULT_RATE_LIMIT,
  lockMs: DEFAULT_WORKER_LOCK_MS,
};

export interface EngineContext {
  logger: Logger;
  store: StateStore;
  client: PlatformClient;
  writeQueue: TypedQueue<WriteChunkData>;
  /**
   * The platform's limit as the workers know it now (the pacer's `limit`,
   * read from the shared state): it sizes a run's chunk jobs and the writes
   * it keeps waiting (src/engine/write-sizing.ts). None: `settings.rateLimit`,
   * as a known limit.
   */
  platformLimit?: () => Promise<KnownLimit>;
  /** Requests in flight at once across the chunks this process holds (none: one at a time). */
  writeSlots?: WriteSlots;
  /** The job definition of this name, freshly loaded (a job file edited between runs counts). */
  loadJob(name: string): JobDefinition;
  /** Where a URL source's credentials and `${NAME}` references are read (config's `sourceEnv`). */
  sourceEnv: SourceEnv;
  /** Wakes a run waiting for its writes (the last write of a round has settled). */
  wakeRun?: (runId: string) => Promise<void>;
  /** Told once a run has ended (completed, failed, stopped), with its final record: alerts. */
  onRunEnd?: (run: RunRecord) => Promise<void>;
  metrics?: Metrics;
  settings: EngineSettings;
}

export function createEngineContext(
  parts: Omit<EngineContext, 'settings'> & { settings?: Partial<EngineSettings> },
): EngineContext {
  return {
    ...parts,
    settings: { ...DEFAULT_ENGINE_SETTINGS, ...parts.settings },
  };
}
