/**
 * The share of the write queue between runs, in Redis: a run's chunk jobs
 * are added with the priorities the share gives them (src/queue/fair-share.ts
 * holds the rules, lua/fair-share-5.lua runs them on the state together with
 * the reading of the queue), and a run asks how many of its writes still
 * wait before it enqueues more.
 *
 * `<prefix>:fair-share` (a hash): `v` (the current round), `u` (a round's
 * lines of a run of weight 1), `at` (when a chunk was last tagged),
 * `r:<runId>` per run with chunks waiting (the tag after its last chunk),
 * `w:<runId>` per run whose chunks are on their way to the queue (when they
 * were tagged).
 */
import type { RedisClient } from '../redis/connection.js';
import { callScript } from '../redis/scripts.js';
import { DEFAULT_PREFIX } from '../defaults.js';
import { waitingWrites } from './fair-share.js';
import type { TypedQueue } from './queues.js';

export const fairShareKey = (prefix: string): string => `${prefix}:fair-share`;

/** A chunk job as `writeChunks` builds it: its lines travel in its data. */
export interface ChunkJob<D extends { lines: readonly number[] }> {
  name: string;
  data: D;
  opts: { jobId: string };
}

/** Whose chunks: the run, and its weight (its job's `priority`). */
export interface ShareOf {
  runId: string;
  weight: number;
  /** Lines of the run's full chunks: the round's unit it proposes (the engine's `shareOf`). */
  chunkSize: number;
}

async function share<D>(queue: TypedQueue<D>, ...args: (string | number)[]): Promise<unknown> {
  // The Redis backend's client is the ioredis connection we gave the queue.
  const client = (await queue.backend.client) as unknown as RedisClient;
  const k = queue.keys;
  return callScript(
    client,
    'fair-share',
    fairShareKey(queue.opts.prefix ?? DEFAULT_PREFIX),
    k.prioritized!,
    k.delayed!,
    k.wait!,
    k.active!,
    ...args,
  );
}

/**
 * Adds a run's chunk jobs to the write queue in its turn: each with the
 * priority (round) the share gives it. A job already in the queue (the same
 * chunk enqueued again after a crash) stays as it is; the run's next chunks
 * then come a little later, by what it would have cost. From their tags
 * until they are added, the share knows them to be on their way.
 */
export async function addInTurn<D extends { lines: readonly number[] }>(
  queue: TypedQueue<D>,
  of: ShareOf,
  jobs: readonly ChunkJob<D>[],
): Promise<void> {
  if (jobs.length === 0) return;
  const lines = jobs.map((j) => j.data.lines.length);
  const priorities = (await share(
    queue,
    'assign',
    of.runId,
    of.chunkSize,
    of.weight,
    ...lines,
  )) as number[];
  const landed = () => share(queue, 'landed', of.runId, of.chunkSize);
  try {
    await queue.addBulk(
      jobs.map((j, n) => ({ ...j, opts: { ...j.opts, priority: Number(priorities[n]) } })),
    );
  } catch (err) {
    // Whatever was added is in the queue; if Redis cannot hear it, ON_THE_WAY_MS ends the wait.
    await landed().catch(() => undefined);
    throw err;
  }
  await landed();
}

/** About how many of a run's writes wait in the queue (its chunks in rounds not served yet). */
export async function writesWaiting<D>(queue: TypedQueue<D>, of: ShareOf): Promise<number> {
  const [units, unit] = (await share(queue, 'backlog', of.runId, of.chunkSize)) as number[];
  return waitingWrites(Number(units), of.weight, Number(unit));
}
