/**
 * The write phase frees a run's planned writes as it goes: a plan chunk is
 * dropped once all its lines have settled (and not before), kept while a line
 * of it is an unknown create (finalize verifies it by its planned write), and
 * counted up again when finalize sends lines again in a new round. A write job
 * attempted again after its lines' chunk was dropped settles nothing twice and
 * reports no failure. On a real Redis store, through the write processor and
 * finalize with a scripted platform client.
 */
import { inflateRawSync } from 'node:zlib';
import type { Job } from 'bullmq';
import { afterAll, describe, expect, it } from 'vitest';
import { RETRY_DEFAULTS } from '../../src/config.js';
import { createEngineContext, type EngineContext } from '../../src/engine/context.js';
import { finalize } from '../../src/engine/finalize.js';
import { writeChunks, writeChunksOfPage, type WriteChunkData } from '../../src/engine/payloads.js';
import { processWriteChunk } from '../../src/engine/write-chunk.js';
import type { JobDefinition } from '../../src/jobs/definition.js';
import { silentLogger } from '../../src/log.js';
import type { PlatformClient } from '../../src/platform/client.js';
import { createWriteQueue, QueueName, type TypedQueue } from '../../src/queue/queues.js';
import { CHUNK_LINES } from '../../src/state/planned-writes.js';
import { StateStore } from '../../src/state/store.js';
import type { WriteAction } from '../../src/sync/action.js';
import { identityKeys } from '../../src/sync/identity.js';
import { useRedis } from '../harness/redis.js';

const { redis, prefix } = useRedis();
const queues: TypedQueue<WriteChunkData>[] = [];
afterAll(async () => {
  for (const q of queues) await q.close();
});
const store = new StateStore(redis, { prefix });
const DEF = {
  name: 'companies',
  entity: 'companies',
  createVia: 'companies',
  fullSnapshot: false,
  priority: 1,
} as unknown as JobDefinition;

let n = 0;
/** Each run's companies are its own: ids of 1,000 per run. */
const idOf = (line: number): number => 7_000_000 + n * 1000 + line;

function body(line: number): Record<string, unknown> {
  return {
    crm_company_id: idOf(line),
    external_id: `hubspot:company:${idOf(line)}`,
    name: `Company ${line}`,
  };
}

function create(line: number): WriteAction {
  const b = body(line);
  return { kind: 'create', line, keys: identityKeys('companies', b), hash: `h${line}`, body: b };
}

/** A run done planning: creates of lines 2 … count + 1 (plan chunks of CHUNK_LINES). */
async function plannedRun(count: number): Promise<{ runId: string; lines: number[] }> {
  const runId = `run-freed-${++n}`;
  await store.runs.create({
    id: runId,
    job: 'companies',
    entity: 'companies',
    mode: 'upsert',
    source: 'test.csv',
  });
  const lines = Array.from({ length: count }, (_, i) => i + 2);
  await store.plannedWrites.save(runId, lines.map(create));
  await store.claims.release(runId);
  await store.progress.setCounts(runId, { writesPlanned: count, writesSettled: 0 });
  await store.runs.update(runId, { status: 'writing', phase: 'waiting' });
  return { runId, lines };
}

/** The chunk jobs of these lines, as the enqueuer makes them, at an attempt. */
function jobsOf(runId: string, lines: readonly number[], round = 0, attemptsMade = 0): Job[] {
  return writeChunks({ id: runId }, DEF, lines, round, 50).map(
    (j) =>
      ({
        id: j.opts.jobId,
        data: j.data,
        queueQualifiedName: `${prefix}:${QueueName.writes}`,
        opts: { attempts: RETRY_DEFAULTS.writeAttempts },
        attemptsMade,
        attemptsStarted: attemptsMade + 1,
      }) as unknown as Job,
  );
}

interface Platform {
  ctx: EngineContext;
  /** Creates sent, by company name. */
  sent: string[];
  /** Lines whose create is answered without an id (outcome unknown: settled pending). */
  noId: Set<number>;
  /** What the platform holds (listed by finalize). */
  records: Record<string, unknown>[];
  /** Chunk jobs finalize enqueued for a new round. */
  enqueued: { data: WriteChunkData }[];
}

function platform(): Platform {
  const p: Platform = {
    sent: [],
    noId: new Set(),
    records: [],
    enqueued: [],
    ctx: undefined as unknown as EngineContext,
  };
  let id = 90_000;
  const createCompany = async (b: Record<string, unknown>): Promise<{ id?: number }> => {
    p.sent.push(String(b.name));
    const record = { ...b, id: ++id };
    p.records.push(record);
    const line = Number(b.crm_company_id) - idOf(0);
    return p.noId.has(line) ? {} : record;
  };
  const client = {
    createCompany,
    createCustomer: createCompany,
    companiesPage: async () => ({
      count: p.records.length,
      next: null,
      previous: null,
      results: p.records,
    }),
  } as unknown as PlatformClient;
  // The real write queue (finalize asks Redis for each chunk's turn), with
  // what it is given kept aside for the test to read.
  const queue = createWriteQueue<WriteChunkData>({ connection: redis, prefix });
  queues.push(queue);
  const writeQueue = new Proxy(queue, {
    get(target, key, receiver) {
      if (key !== 'addBulk') return Reflect.get(target, key, receiver) as unknown;
      return async (jobs: { data: WriteChunkData }[]) => {
        p.enqueued.push(...jobs);
        return target.addBulk(jobs as Parameters<typeof target.addBulk>[0]);
      };
    },
  });
  p.ctx = createEngineContext({
    logger: silentLogger,
    store,
    client,
    writeQueue,
    loadJob: () => {
      throw new Error('not used');
    },
    sourceEnv: {},
    settings: { retry: { ...RETRY_DEFAULTS, requestMinDelayMs: 0, requestMaxDelayMs: 0 } },
  });
  return p;
}

async function runJobs(ctx: EngineContext, jobs: readonly Job[]): Promise<void> {
  for (const job of jobs) await processWriteChunk(ctx, job);
}

/** Which of these lines still have a planned write. */
async function readable(runId: string, lines: readonly number[]): Promise<number[]> {
  return (await store.plannedWrites.of(runId, lines)).map((w) => w.line);
}

/** The plan chunks left (first lines of the bodies kept), and the plan hash's fields. */
/**
 * The plan's chunks still holding writes, and its fields but those of dropped
 * chunks (a dropped chunk's body is an empty list, `dropped`).
 */
async function planLeft(
  runId: string,
): Promise<{ chunks: number[]; fields: string[]; dropped: number[] }> {
  const all = await redis.hgetallBuffer(store.keys.plan(runId));
  const isChunk = (f: string) => /^\d+$/.test(f);
  const empty = (f: string) => inflateRawSync(all[f]!).toString() === '[]';
  const byLine = (x: number, y: number) => x - y;
  const names = Object.keys(all);
  const dropped = names
    .filter((f) => isChunk(f) && empty(f))
    .map(Number)
    .sort(byLine);
  const fields = names.filter((f) => !(isChunk(f) && empty(f))).sort();
  const chunks = fields.filter(isChunk).map(Number).sort(byLine);
  return { chunks, fields, dropped };
}

/** The write jobs the enqueuer makes of a whole scan, page by page, chunks of 50. */
async function pageJobs(runId: string): Promise<ReturnType<typeof writeChunksOfPage>> {
  const out: ReturnType<typeof writeChunksOfPage> = [];
  let cursor = '0';
  do {
    const page = await store.plannedWrites.scan(runId, cursor, 500);
    cursor = page.cursor;
    out.push(...writeChunksOfPage({ id: runId }, DEF, page, 50));
  } while (cursor !== '0');
  return out;
}

/** The lines of each page of a scan, as the enqueuer reads them. */
async function pages(runId: string): Promise<number[][]> {
  const out: number[][] = [];
  let cursor = '0';
  do {
    const page = await store.plannedWrites.scan(runId, cursor, 500);
    cursor = page.cursor;
    out.push(page.writes.map((w) => w.line));
  } while (cursor !== '0');
  return out;
}

describe('planned writes freed as they settle', () => {
  it('a plan chunk is dropped once all its lines have settled, and not before', async () => {
    const { ctx } = platform();
    // Three plan chunks: lines 2-129, 130-257, 258-301.
    const { runId, lines } = await plannedRun(2 * CHUNK_LINES + 44);
    const [a, b, c] = [2, 2 + CHUNK_LINES, 2 + 2 * CHUNK_LINES];
    expect(await redis.hget(store.keys.plan(runId), `u:${a}`)).toBe(String(CHUNK_LINES));
    // Every line of the first chunk but its last, and the second chunk's first line.
    await runJobs(ctx, jobsOf(runId, lines.slice(0, CHUNK_LINES - 1)));
    await runJobs(ctx, jobsOf(runId, [b]));
    expect(await readable(runId, [a, b - 1, b, b + 1])).toEqual([a, b - 1, b, b + 1]);
    expect(await redis.hget(store.keys.plan(runId), `u:${a}`)).toBe('1');
    // The first chunk's last line: the chunk goes, the others stay whole.
    await runJobs(ctx, jobsOf(runId, [b - 1]));
    expect(await readable(runId, [a, b - 1, b, b + 1, c])).toEqual([b, b + 1, c]);
    expect(await planLeft(runId)).toEqual({
      chunks: [b, c],
      fields: [`${b}`, `${c}`, `n:${b}`, `n:${c}`, 'total', `u:${b}`, `u:${c}`].sort(),
      dropped: [a],
    });
    // Its body is an empty list, as a reader of an earlier release reads it: no writes left.
    const [page] = await pages(runId);
    expect(page!.slice(0, 2)).toEqual([b, b + 1]);
    // A dropped chunk keeps its place in the index: a line of it finds no planned write.
    expect(await redis.zrange(store.keys.planIndex(runId), '0', '-1')).toEqual([
      `${a}`,
      `${b}`,
      `${c}`,
    ]);
    await runJobs(ctx, jobsOf(runId, lines.slice(CHUNK_LINES + 1)));
    expect(await planLeft(runId)).toEqual({ chunks: [], fields: ['total'], dropped: [a, b, c] });
    // `total` still says how many writes were planned.
    expect(await store.plannedWrites.count(runId)).toBe(lines.length);
    expect((await store.runs.get(runId))!.counts).toMatchObject({
      created: lines.length,
      writesSettled: lines.length,
    });
  });

  it('a chunk with an unknown create is kept, and finalize verifies the create by its plan', async () => {
    const p = platform();
    const { runId, lines } = await plannedRun(2 * CHUNK_LINES + 44);
    const unknown = 2 + CHUNK_LINES + 7;
    p.noId.add(unknown);
    await runJobs(p.ctx, jobsOf(runId, lines));
    const run = (await store.runs.get(runId))!;
    expect(run.counts).toMatchObject({ writesSettled: lines.length, created: lines.length - 1 });
    expect(await redis.smembers(store.keys.unknownCreates(runId))).toEqual([String(unknown)]);
    // The first and last chunks are gone; the unknown create's chunk stays.
    expect((await planLeft(runId)).chunks).toEqual([2 + CHUNK_LINES]);
    expect(await store.claims.holders(runId, create(unknown).keys)).toEqual([unknown, unknown]);
    expect(await readable(runId, [unknown])).toEqual([unknown]);

    // The create had landed: finalize finds it by listing and adopts it.
    await finalize(p.ctx, run, DEF, silentLogger);
    const done = (await store.runs.get(runId))!;
    expect(done.status).toBe('completed');
    expect(done.counts).toMatchObject({ created: lines.length, failed: 0 });
    expect(await redis.scard(store.keys.unknownCreates(runId))).toBe(0);
    expect(await store.records.listPending('companies')).toEqual([]);
    expect(p.sent).toHaveLength(lines.length);
  });

  it('lines sent again in a new round count in their chunk again: readable until they settle', async () => {
    const p = platform();
    const { runId, lines } = await plannedRun(2 * CHUNK_LINES);
    const [x, y] = [2 + CHUNK_LINES + 3, 2 + CHUNK_LINES + 90];
    p.noId.add(x).add(y);
    await runJobs(p.ctx, jobsOf(runId, lines));
    expect((await planLeft(runId)).chunks).toEqual([2 + CHUNK_LINES]);
    // Neither create landed: the listing does not find them, and a new round sends both again.
    p.records.length = 0;
    p.noId.clear();
    await finalize(p.ctx, (await store.runs.get(runId))!, DEF, silentLogger);
    expect(p.enqueued.map((j) => j.data.lines)).toEqual([[x, y]]);
    const round = p.enqueued[0]!.data.round;
    expect(await redis.hget(store.keys.plan(runId), `u:${2 + CHUNK_LINES}`)).toBe('2');

    await runJobs(p.ctx, jobsOf(runId, [x], round));
    expect(await readable(runId, [x, y])).toEqual([x, y]);
    await runJobs(p.ctx, jobsOf(runId, [y], round));
    expect(await planLeft(runId)).toMatchObject({ chunks: [], fields: ['total'] });
    expect((await store.runs.get(runId))!.counts).toMatchObject({
      created: lines.length,
      writesSettled: lines.length + 2,
      writesPlanned: lines.length + 2,
    });
  });

  it('a scan keeps its pages as chunks are dropped: the enqueuer, scanning again, makes the same jobs', async () => {
    const { ctx } = platform();
    // Eight plan chunks: pages of four chunks (512 lines) when 500 writes are asked for.
    const { runId, lines } = await plannedRun(8 * CHUNK_LINES);
    const before = await pages(runId);
    expect(before.map((p) => p.length)).toEqual([4 * CHUNK_LINES, 4 * CHUNK_LINES, 0]);
    const jobsBefore = await pageJobs(runId);
    // The first chunk's lines settle, and the enqueuer starts its scan again.
    await runJobs(ctx, jobsOf(runId, lines.slice(0, CHUNK_LINES)));
    const after = await pages(runId);
    expect(after).toEqual([before[0]!.slice(CHUNK_LINES), before[1], []]);
    // The jobs of the chunks left are jobs made before, lines and ids alike: no line is in two.
    const jobsAfter = await pageJobs(runId);
    const byId = new Map(jobsBefore.map((j) => [j.opts.jobId, j.data.lines]));
    for (const j of jobsAfter) expect(byId.get(j.opts.jobId)).toEqual(j.data.lines);
    expect(jobsAfter.flatMap((j) => j.data.lines)).toEqual(after.flat());
    expect(jobsAfter.length).toBe(jobsBefore.length - Math.ceil(CHUNK_LINES / 50));
  });

  it('a create answered late as not landed keeps its pending marks, and its chunk, for finalize', async () => {
    const { runId } = await plannedRun(3);
    const [w2, w3] = [create(2), create(3)];
    const claim = () =>
      store.writes.claim({ runId, entity: 'companies', line: 2, createKeys: w2.keys });
    // Attempt A sends line 2; attempt B, taking the chunk over, finds it pending.
    expect(await claim()).toBe('go');
    expect(await claim()).toBe('pending');
    const finish = (line: number, outcome: 'pending' | 'failed' | 'updated', clear: boolean) =>
      store.writes.finish(runId, 'companies', [
        { line, outcome, keys: line === 2 ? w2.keys : w3.keys, clearPending: clear, planChunk: 2 },
      ]);
    await finish(2, 'pending', false);
    // A's answer comes: not applied. The line counts as failed; its marks stay for finalize.
    await finish(2, 'failed', true);
    expect(await redis.scard(store.keys.unknownCreates(runId))).toBe(0);
    expect(await store.records.pending('companies', w2.keys)).toMatchObject({ runId });
    await finish(3, 'updated', false);
    await finish(4, 'updated', false);
    expect((await store.runs.get(runId))!.counts.writesSettled).toBe(3);
    expect((await planLeft(runId)).chunks).toEqual([2]);
    expect(await store.claims.holders(runId, w2.keys)).toEqual([2, 2]);
  });

  it('a write job attempted again after its lines’ chunk was dropped settles nothing twice, fails nothing', async () => {
    const p = platform();
    const { runId, lines } = await plannedRun(2 * CHUNK_LINES);
    const jobs = jobsOf(runId, lines);
    await runJobs(p.ctx, jobs);
    expect(await planLeft(runId)).toEqual({
      chunks: [],
      fields: ['total'],
      dropped: [2, 2 + CHUNK_LINES],
    });
    const before = (await store.runs.get(runId))!.counts;
    expect(before).toMatchObject({ created: lines.length, failed: 0 });

    // A worker killed before the job was marked done: BullMQ hands it out again.
    const again = jobsOf(runId, lines, 0, 1)[1]!;
    await expect(processWriteChunk(p.ctx, again)).resolves.toEqual({ skipped: 50 });
    expect(p.sent).toHaveLength(lines.length);
    expect(await store.runs.listFailures(runId)).toEqual([]);
    expect((await store.runs.get(runId))!.counts).toEqual(before);

    // The finish script itself: a line settled before takes no failure row and no count.
    const reply = await store.writes.finish(runId, 'companies', [
      {
        line: lines[0]!,
        outcome: 'failed',
        keys: [],
        clearPending: false,
        failure: { line: lines[0]!, kind: 'failed', reason: 'expired', identity: 'x' },
      },
    ]);
    expect(reply.first).toEqual([false]);
    expect(await store.runs.listFailures(runId)).toEqual([]);
    expect((await store.runs.get(runId))!.counts).toEqual(before);
  });
});
