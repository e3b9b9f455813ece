/**
 * What travels in the queues, validated with zod when a worker takes a job:
 * a job from an older version, or one edited by hand in Redis, is refused
 * with a clear message instead of half-processed.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { JOB_NAME, type JobDefinition } from '../jobs/definition.js';
import type { ShareOf } from '../queue/fair-share-store.js';
import { RUN_ID, type RunRecord } from '../state/runs.js';
import { MODES, type Mode } from '../sync/action.js';
import { ENTITIES, type Entity } from '../sync/identity.js';

/** A request to run a job definition (queue `sync-runs`). */
export const RunJobData = z.strictObject({
  /** The job definition's name (its file name in the jobs folder). */
  job: z.string().regex(JOB_NAME, 'not a job name'),
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
  retryOf: z.string().regex(RUN_ID, 'not a run id').optional(),
});
export type RunJobData = z.input<typeof RunJobData>;
export type RunJobRequest = z.output<typeof RunJobData>;

/**
 * A chunk of a run's planned writes (queue `platform-writes`): only their
 * lines travel, the bodies stay in the run's plan (read when the chunk
 * starts), so the queue window stays small whatever the rows hold.
 */
export const WriteChunkData = z.strictObject({
  runId: z.string().regex(RUN_ID, 'not a run id'),
  entity: z.enum(ENTITIES as [Entity, ...Entity[]]),
  /** Creates of companies go to POST /companies or POST /customers. */
  createVia: z.enum(['companies', 'customers']).default('companies'),
  /** The create round the chunk belongs to (0, then one per verification that re-sends). */
  round: z.number().int().min(0),
  /** Lines of the export whose planned writes the chunk sends. */
  lines: z.array(z.number().int()).min(1),
});
export type WriteChunkData = z.input<typeof WriteChunkData>;
export type WriteChunk = z.output<typeof WriteChunkData>;

/** Planned writes per chunk job at most (the engine's `writeChunk`; fewer at a low limit). */
export const DEFAULT_WRITE_CHUNK = 50;

/**
 * The queue jobs of planned writes, `size` lines each, in line order. A job
 * id names the run, round, first line and a digest of every line: the same
 * chunk enqueued again after a crash adds nothing new, and a chunk of other
 * lines is never mistaken for it. Chunks that overlap (a page read again in
 * another order) are harmless: each write is claimed and settled on its own.
 */
export function writeChunks(
  run: Pick<RunRecord, 'id'>,
  def: Pick<JobDefinition, 'entity' | 'createVia'>,
  lines: readonly number[],
  round: number,
  size: number = DEFAULT_WRITE_CHUNK,
) {
  const sorted = [...lines].sort((a, b) => a - b);
  const jobs = [];
  for (let i = 0; i < sorted.length; i += size) {
    const part = sorted.slice(i, i + size);
    const data: WriteChunkData = {
      runId: run.id,
      entity: def.entity,
      createVia: def.createVia,
      round,
      lines: part,
    };
    jobs.push({
      name: 'chunk',
      data,
      opts: { jobId: `${run.id}-${round}-${part[0]!}-${digest(part)}` },
    });
  }
  return jobs;
}

/**
 * The write jobs of a page of planned writes: cut within each plan chunk,
 * never across two, so that a page read again after a restart (some chunks
 * dropped meanwhile, their lines settled) gives the chunks left the same jobs,
 * which the queue knows by their ids: no line is in two jobs at once. The
 * enqueuer's chunks are round 0; later rounds are finalize's retries.
 */
export function writeChunksOfPage(
  run: Pick<RunRecord, 'id'>,
  def: Pick<JobDefinition, 'entity' | 'createVia'>,
  page: { chunks: readonly (readonly { line: number }[])[] },
  size: number = DEFAULT_WRITE_CHUNK,
) {
  return page.chunks.flatMap((c) =>
    writeChunks(
      run,
      def,
      c.map((w) => w.line),
      0,
      size,
    ),
  );
}

/** What follows `<run id>-` in a write chunk's job id: round, first line, digest (`writeChunks`). */
const CHUNK_ID_TAIL = /^\d+-\d+-[0-9a-f]{10}$/;

/**
 * Whether a `platform-writes` job id is a chunk of `runId` (`writeChunks`
 * names them): a run id that starts another's, followed by `-`, is told
 * apart by the rest of the id.
 */
export function isWriteChunkOf(jobId: string, runId: string): boolean {
  return jobId.startsWith(`${runId}-`) && CHUNK_ID_TAIL.test(jobId.slice(runId.length + 1));
}

/**
 * A run's chunks and their share of the write queue: its job's `priority`
 * is its weight; its chunks have its record's `writeChunk` lines (`most`,
 * the engine's `writeChunk`, for a run that has none), the round it
 * proposes (the share takes it while nothing waits:
 * src/queue/fair-share.ts). A run that starts waits for the chunks the
 * workers hold and for one round of each other run at most.
 */
export function shareOf(
  run: Pick<RunRecord, 'id' | 'writeChunk'>,
  def: Pick<JobDefinition, 'priority'>,
  most: number,
): ShareOf {
  return { runId: run.id, weight: def.priority, chunkSize: run.writeChunk ?? most };
}

function digest(lines: readonly number[]): string {
  return createHash('sha1').update(lines.join(',')).digest('hex').slice(0, 10);
}
