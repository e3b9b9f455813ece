/**
 * What travels in the queues, validated with zod when a worker takes a job:
 * a job from an older version, or one edited by hand in Redis, is refused
 * with a clear message instead of half-processed.
 */
import { z } from 'zod';
import type { JobDefinition } from '../jobs/definition.js';
import type { RunRecord } from '../state/runs.js';
import type { WriteAction } from '../sync/action.js';
import { MODES, type Mode } from '../sync/action.js';
import { ENTITIES, type Entity } from '../sync/identity.js';

/** A request to run a job definition (queue `sync-runs`). */
export const RunJobData = z.strictObject({
  /** The job definition's name (its file name in the jobs folder). */
  job: z.string().min(1),
  /** Overrides the job's source (a path or URL). */
  source: z.string().min(1).optional(),
  /** Refresh the platform index and re-plan every record. */
  full: z.boolean().default(false),
  /** Write even when a safety threshold trips. */
  force: z.boolean().default(false),
  /** Overrides the job's mode. */
  mode: z.enum(MODES as [Mode, ...Mode[]]).optional(),
  /** Who asked: the CLI, the scheduler (with its slot), or a retry of another run. */
  trigger: z.enum(['cli', 'schedule', 'retry']).default('cli'),
  slot: z.string().optional(),
  /** For `retry`: the run whose failed writes are tried again. */
  retryOf: z.string().optional(),
});
export type RunJobData = z.input<typeof RunJobData>;
export type RunJobRequest = z.output<typeof RunJobData>;

/** One platform write (queue `platform-writes`). */
export const WriteJobData = z.strictObject({
  runId: z.string().min(1),
  entity: z.enum(ENTITIES as [Entity, ...Entity[]]),
  kind: z.enum(['create', 'update']),
  /** Line of the export the body comes from (for failure reports). */
  line: z.number().int(),
  /** Identity keys in priority order. */
  keys: z.array(z.string()).min(1),
  hash: z.string().min(1),
  body: z.record(z.string(), z.unknown()),
  /** For updates. */
  platformId: z.number().int().optional(),
  /** Creates of companies go to POST /companies or POST /customers. */
  createVia: z.enum(['companies', 'customers']).default('companies'),
});
export type WriteJobData = z.input<typeof WriteJobData>;
export type WriteJob = z.output<typeof WriteJobData>;

/** The queue job of a planned write: one per run, line and round. */
export function writeJob(run: RunRecord, def: JobDefinition, a: WriteAction, round: number) {
  const data: WriteJobData = {
    runId: run.id,
    entity: def.entity,
    kind: a.kind,
    line: a.line,
    keys: a.keys,
    hash: a.hash,
    body: a.body,
    createVia: def.createVia,
    ...(a.kind === 'update' && { platformId: a.platformId }),
  };
  // One job per run, line and round: enqueueing again after a crash adds nothing new.
  return { name: a.kind, data, opts: { jobId: `${run.id}-${a.line}-${round}` } };
}
