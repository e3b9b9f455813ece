/**
 * Redis memory of a first sync, per planned row, on a private redis-server
 * that holds nothing else. Three moments, each read from INFO memory against
 * the empty server's `used_memory` (the baseline):
 *
 * 1. planning: a real planning pass (`planExport` with the run's Redis sink)
 *    of the generated HubSpot export into empty state, so every row is a
 *    planned create; `used_memory_peak` after it (CONFIG RESETSTAT zeroes the
 *    peak before the baseline is read);
 * 2. + queue window: the write jobs the enqueuer keeps waiting at most
 *    (`maxWaitingWrites / writeChunk` chunk jobs, built by `writeChunks`,
 *    added to a BullMQ write queue on the same Redis), plus as many again for
 *    the completed jobs the queue retains (`RETENTION.writes.completed.count`,
 *    approximated by waiting jobs of the same payload);
 * 3. + the write phase: every planned write claimed and settled through the
 *    worker's own Redis steps, a chunk job's lines at a time in line order
 *    (`plannedWrites.located`, `writes.claimAll`, `writes.finish` with each
 *    write's plan chunk named and its record committed, as the platform had
 *    created it), leaving what the write phase leaves at its end, before the
 *    run's scratch is cleared: record state, the settled lines, the counters,
 *    and the planned writes the settle path kept. With `freePlan` false the
 *    plan chunks are not named, so every planned write is kept (as before the
 *    write path freed them).
 *
 * Not included: the platform requests and the worker's connections and
 * BullMQ bookkeeping of the chunk jobs beyond the window; a chunk job's data
 * is its lines, so a job of 50 lines is measured here with the same payload
 * the enqueuer sends.
 */
import { Redis } from 'ioredis';
import { ensureData } from '../crm-data.js';
import { DEFAULT_ENGINE_SETTINGS } from '../../src/engine/context.js';
import { writeChunks } from '../../src/engine/payloads.js';
import type { PlanningSink } from '../../src/engine/plan-pass.js';
import { redisPlanningSink } from '../../src/engine/run-planning-sink.js';
import { createWriteQueue, RETENTION } from '../../src/queue/queues.js';
import { CLAIM_BUCKETS } from '../../src/state/keys.js';
import { StateStore } from '../../src/state/store.js';
import type { FinishedWrite } from '../../src/state/write-steps.js';
import { removeDir, startRedisServer } from '../../test/harness/redis-server.js';
import { benchDuplicates, planGeneratedCompanies } from './plan-pass.js';

export interface FirstSyncMemory {
  rows: number;
  planned: number;
  planMs: number;
  /** Bytes over the empty server's baseline. */
  planningPeak: number;
  afterPlanning: number;
  /**
   * Bytes of each part of the run's scratch (MEMORY USAGE, exact): the claims
   * as planning ends (then freed), the rest after planning.
   */
  parts: { claims: number; plan: number; failures: number; other: number };
  windowJobs: number;
  window: number;
  withState: number;
  peakAtEnd: number;
  /** Bytes of the run's planned writes left at the end of the write phase (MEMORY USAGE). */
  planAtEnd: number;
  /** Bytes of the run's settled lines at the end (MEMORY USAGE). */
  settledAtEnd: number;
  redisVersion: string;
}

async function memory(redis: Redis): Promise<{ used: number; peak: number }> {
  const info = await redis.info('memory');
  const num = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(info)?.[1]);
  return { used: num('used_memory'), peak: num('used_memory_peak') };
}

async function settled(redis: Redis): Promise<{ used: number; peak: number }> {
  // Lazy frees and the allocator's bookkeeping settle within a moment.
  await new Promise((r) => setTimeout(r, 300));
  return memory(redis);
}

async function usage(redis: Redis, keys: readonly string[]): Promise<number> {
  let total = 0;
  for (let i = 0; i < keys.length; i += 2000) {
    const p = redis.pipeline();
    for (const k of keys.slice(i, i + 2000)) p.memory('USAGE', k, 'SAMPLES', '0');
    for (const [, v] of (await p.exec()) ?? []) total += Number(v ?? 0);
  }
  return total;
}

export async function firstSyncMemory(rows: number, freePlan: boolean): Promise<FirstSyncMemory> {
  const path = await ensureData('csv', rows);
  const server = await startRedisServer();
  const redis = new Redis(server.url, { maxRetriesPerRequest: null });
  try {
    const redisVersion = /redis_version:(\S+)/.exec(await redis.info('server'))?.[1] ?? '?';
    const store = new StateStore(redis);
    const runId = 'run-20261123T160000Z-bench1';
    await store.runs.create({
      id: runId,
      job: 'bench',
      entity: 'companies',
      mode: 'upsert',
      source: path,
    });
    await redis.config('RESETSTAT');
    const base = await settled(redis);

    const k = store.keys;
    const claimKeys = Array.from({ length: CLAIM_BUCKETS }, (_, b) => k.claimBucket(runId, b));
    // The claims at their largest: measured as planning ends, before the sink frees them.
    const real = redisPlanningSink(store, runId, 'companies', 'bench', {
      duplicates: benchDuplicates(),
    });
    let claims = 0;
    const sink: PlanningSink = {
      ...real,
      finish: async () => {
        claims = await usage(redis, claimKeys);
        await real.finish?.();
      },
    };
    const t0 = performance.now();
    const counts = await planGeneratedCompanies(path, sink);
    const planMs = performance.now() - t0;
    const planned = await store.plannedWrites.count(runId);
    if (counts.read !== rows || planned !== counts.create)
      throw new Error(`planned ${planned} of ${counts.read} rows (${counts.create} creates)`);
    const afterPlan = await settled(redis);
    const plan = await usage(redis, [k.plan(runId), k.planIndex(runId)]);
    const failures = await usage(redis, [k.failures(runId)]);
    const scratch = await usage(redis, [...k.scratch(runId), k.failures(runId), k.run(runId)]);

    // The queue window, and as many retained completed jobs, with the enqueuer's payload.
    const queue = createWriteQueue({ connection: redis });
    const lines: number[] = [];
    let cursor = '0';
    const chunk = DEFAULT_ENGINE_SETTINGS.writeChunk;
    const windowJobs =
      Math.ceil(DEFAULT_ENGINE_SETTINGS.maxWaitingWrites / chunk) +
      RETENTION.writes.completed.count;
    do {
      const page = await store.plannedWrites.scan(runId, cursor, 500);
      cursor = page.cursor;
      lines.push(...page.writes.map((w) => w.line));
    } while (cursor !== '0' && lines.length < windowJobs * chunk);
    const jobs = writeChunks(
      { id: runId },
      { entity: 'companies', createVia: 'companies' },
      lines,
      0,
      chunk,
    );
    await queue.addBulk(jobs.slice(0, windowJobs));
    const withWindow = await settled(redis);

    // The write phase: every line claimed and settled as a worker does it, chunk job by chunk
    // job in the enqueuer's order (the lines of a full scan, taken before any settles).
    const all: number[] = [];
    cursor = '0';
    do {
      const page = await store.plannedWrites.scan(runId, cursor, 5000);
      cursor = page.cursor;
      all.push(...page.writes.map((w) => w.line));
    } while (cursor !== '0');
    await store.runs.update(runId, { status: 'writing', phase: 'waiting' });
    let id = 1_000_000;
    for (let i = 0; i < all.length; i += chunk) {
      const located = await store.plannedWrites.located(runId, all.slice(i, i + chunk));
      const claims = await store.writes.claimAll(
        runId,
        'companies',
        located.map(({ write: w }) => ({
          line: w.line,
          ...(w.kind === 'create' && { createKeys: w.keys }),
        })),
      );
      const done: FinishedWrite[] = located.map(({ write: w, chunk: c }) => ({
        line: w.line,
        outcome: 'created',
        keys: w.keys,
        clearPending: true,
        commit: { platformId: ++id, hash: w.hash, job: 'bench' },
        ...(freePlan && { planChunk: c }),
      }));
      if (claims.some((c) => c !== 'go')) throw new Error(`claims refused: ${claims.join(',')}`);
      const reply = await store.writes.finish(runId, 'companies', done);
      if (reply.first.some((f) => !f)) throw new Error('a line settled twice');
    }
    const end = await settled(redis);
    const planAtEnd = await usage(redis, [k.plan(runId), k.planIndex(runId)]);
    const settledAtEnd = await usage(redis, [k.settled(runId)]);
    await queue.close();

    return {
      rows,
      planned,
      planMs,
      planningPeak: afterPlan.peak - base.used,
      afterPlanning: afterPlan.used - base.used,
      parts: { claims, plan, failures, other: scratch - plan - failures },
      windowJobs: Math.min(windowJobs, jobs.length),
      window: withWindow.used - afterPlan.used,
      withState: end.used - base.used,
      peakAtEnd: end.peak - base.used,
      planAtEnd,
      settledAtEnd,
      redisVersion,
    };
  } finally {
    redis.disconnect();
    await server.stop();
    removeDir(server.dir);
  }
}
