/**
 * Runs of different jobs share the write queue (src/queue/fair-share.ts),
 * through the whole engine: a small job started while a backfill has all
 * its writes queued completes while most of the backfill is still to be
 * written, and a plan of a job (the console's, on the worker's own client)
 * is made meanwhile without waiting for any write. Counts, not clocks: what
 * is left of the backfill when each of the two ends.
 */
import { describe, expect, it } from 'vitest';
import { planJob } from '../../src/engine/dry-run.js';
import { isWriteChunkOf } from '../../src/engine/payloads.js';
import { cancelRun, jobLoader } from '../../src/engine/run-service.js';
import { pacerKey, RedisPacer } from '../../src/queue/pacer.js';
import type { RunRecord } from '../../src/state/runs.js';
import {
  companyRows,
  hubspotCells,
  hubspotJob,
  HUBSPOT_HEADER,
  useEngines,
  type EngineHarness,
} from '../harness/engine.js';

const engine = useEngines();

const BACKFILL = 1_200;
const SMALL = 40;
const PREVIEW = 30;

describe('engine: runs of different jobs share the writes', () => {
  it('completes a small job and a plan while a backfill still has most of its writes to make', async () => {
    // 300/s (paced at 270): the backfill's writes take about 4.5 s, every one queued at once.
    const h = await engine({ env: { PLATFORM_RATE_LIMIT: '300' } });
    const big = h.writeCsv('big.csv', HUBSPOT_HEADER, companyRows(BACKFILL).map(hubspotCells));
    const small = h.writeCsv(
      'small.csv',
      HUBSPOT_HEADER,
      companyRows(SMALL, 7_000_001).map(hubspotCells),
    );
    const preview = h.writeCsv(
      'preview.csv',
      HUBSPOT_HEADER,
      companyRows(PREVIEW, 8_000_001).map(hubspotCells),
    );
    h.writeJob('backfill', hubspotJob(big));
    h.writeJob('small', hubspotJob(small));
    h.writeJob('preview', hubspotJob(preview));
    const service = await h.startWorkers();

    const backfillId = await h.enqueue('backfill');
    let backfill: RunRecord | undefined;
    const backfillDone = h.waitForRun(backfillId, {
      timeoutMs: 60_000,
      onPoll: (r) => {
        backfill = r;
      },
    });
    // Awaited at the end; a failure before then must not leave it unhandled.
    backfillDone.catch(() => undefined);
    // Under way: writing, its chunks all in the queue (they are 1,200 writes, the bound 5,000).
    while (!backfill || backfill.status !== 'writing' || backfill.counts.writesSettled < 50) {
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(backfill.counts.writesPlanned).toBe(BACKFILL);
    const left = async () => {
      const r = (await h.store.runs.get(backfillId))!;
      return r.counts.writesPlanned - r.counts.writesSettled;
    };

    const smallRun = (async () => {
      const run = await h.runJob('small', { timeoutMs: 60_000 });
      return { run, left: await left() };
    })();
    // The console's plan: the worker's own client, whose pacer the backfill's writes queue on.
    const plan = (async () => {
      const result = await planJob(
        {
          store: h.store,
          client: service.ctx.client,
          logger: h.logger,
          loadJob: jobLoader(h.config, h.jobsDir),
          sourceEnv: h.config.sourceEnv,
        },
        'preview',
        { full: true },
      );
      return { result, left: await left() };
    })();

    const [s, p] = await Promise.all([smallRun, plan]);
    expect(s.run.status).toBe('completed');
    expect(s.run.counts).toMatchObject({ created: SMALL, failed: 0 });
    expect(p.result.counts.create).toBe(PREVIEW);
    expect(p.result.indexSource).toBe('listed');
    // Queued behind the backfill, the small job's writes would come after every one of its
    // writes. Shared, it ends with most of them still to make; so does the plan, which makes
    // none. (The backfill goes on meanwhile, slowed by the small job's planning on its CPU:
    // about 500 of its writes settled while the small job ran, on a loaded two-core machine.)
    expect(s.left).toBeGreaterThan(BACKFILL / 4);
    expect(p.left).toBeGreaterThan(BACKFILL / 4);

    // The rest of the backfill is not the point: it is cancelled, and ends with what it sent.
    await cancelRun({ store: h.store }, backfillId);
    const done = await backfillDone;
    expect(done.status).toBe('cancelled');
    expect(done.counts.created).toBe(done.counts.writesSettled);
    const dump = await h.dump();
    expect(dump.companies).toHaveLength(done.counts.created + SMALL);
  });

  it('at a low limit, starts a small job after a few of the backfill’s writes, not its chunks of 50', async () => {
    // 20/s (paced at 19.4): a chunk is a quarter second of writes, 5; a worker holds 3 chunks
    // (the 200 ms latency hint), and a round of the share is 5 writes of each run.
    const h = await engine({ env: { PLATFORM_RATE_LIMIT: '20' } });
    // Ahead of its first write: the worker's 3 chunks (15 writes) and the backfill's chunk of
    // the current round (5). With chunks of 50, 123 were ahead of it; with rounds of 50, 39.
    expect(await writesAheadOfSmallJob(h)).toBeLessThanOrEqual(25);
  });

  it('at a limit `auto` learned, shares in rounds of that limit’s chunks', async () => {
    const h = await engine({ env: { PLATFORM_RATE_LIMIT: 'auto' }, deferWorkers: true });
    await learned(h, 20);
    // As at a fixed 20/s; with rounds of 50 (a quarter second at PLATFORM_RATE_LIMIT_MAX,
    // 200/s), 39-40 were ahead of it.
    expect(await writesAheadOfSmallJob(h)).toBeLessThanOrEqual(25);
  });

  it('cuts a run’s chunks by the limit `auto` learned, not by PLATFORM_RATE_LIMIT_MAX', async () => {
    const h = await engine({ env: { PLATFORM_RATE_LIMIT: 'auto' }, deferWorkers: true });
    await learned(h, 20);
    const rows = companyRows(12).map(hubspotCells);
    h.writeJob('small', hubspotJob(h.writeCsv('small.csv', HUBSPOT_HEADER, rows)));
    await h.startWorkers();
    const run = await h.runJob('small', { timeoutMs: 30_000 });
    expect(run.counts).toMatchObject({ created: 12, failed: 0 });
    // A quarter second at 20/s; at PLATFORM_RATE_LIMIT_MAX (200/s), 50.
    expect(run.writeChunk).toBe(5);
  });

  it('cuts a run’s chunks by the limit another replica learned while this worker sent nothing', async () => {
    const h = await engine({ env: { PLATFORM_RATE_LIMIT: 'auto' } });
    const csv = (name: string, rows: number, from?: number) =>
      h.writeCsv(name, HUBSPOT_HEADER, companyRows(rows, from).map(hubspotCells));
    h.writeJob('first', hubspotJob(csv('first.csv', 3)));
    h.writeJob('small', hubspotJob(csv('small.csv', 12, 7_000_001)));
    await h.startWorkers();
    // Nothing learned yet: chunks of 50. The platform is listed now, so the next run's
    // planning books no turn (which would read the shared state) before it cuts its chunks.
    expect((await h.runJob('first')).writeChunk).toBe(50);
    // Another replica meets the limit meanwhile, 20/s.
    await learned(h, 20);
    const run = await h.runJob('small', { timeoutMs: 30_000 });
    expect(run.counts).toMatchObject({ created: 12, failed: 0 });
    expect(run.writeChunk).toBe(5);
  });

  it('cuts what a backfill enqueues after its bound held it by the limit `auto` met since', async () => {
    const h = await engine({
      env: { PLATFORM_RATE_LIMIT: 'auto' },
      settings: { maxWaitingWrites: 50 },
    });
    const rows = companyRows(700).map(hubspotCells);
    h.writeJob('backfill', hubspotJob(h.writeCsv('big.csv', HUBSPOT_HEADER, rows)));
    const service = await h.startWorkers();
    // Each chunk job seen waiting or taken: its first line and its lines.
    const seen = new Map<number, number>();
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const jobs = await service.writeQueue.getJobs(['prioritized', 'active']);
        for (const j of jobs) if (j) seen.set(j.data.lines[0]!, j.data.lines.length);
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const id = await h.enqueue('backfill');
    // Its first page (four plan chunks, 512 writes) is past the bound of 50: it stops enqueueing.
    while (!(await h.store.runs.get(id))?.enqueueFrom) await new Promise((r) => setTimeout(r, 5));
    expect((await h.store.runs.get(id))?.writeChunk).toBe(50);
    // The platform's limit is met meanwhile: 100/s, a quarter second of which is 25 writes.
    await learned(h, 100);
    const run = await h.waitForRun(id, { timeoutMs: 60_000 });
    sampling = false;
    await sampler;
    expect(run.counts).toMatchObject({ created: 700, failed: 0 });
    expect(run.writeChunk).toBe(25);
    // Cut within plan chunks of 128 lines: 50, 50 and 28 lines before; 25 (and 3) after.
    const firstSmall = Math.min(...[...seen].filter(([, n]) => n === 25).map(([line]) => line));
    expect(firstSmall).toBeLessThan(Infinity);
    expect([...seen].some(([line, n]) => line < firstSmall && n === 50)).toBe(true);
    expect([...seen].filter(([line, n]) => line >= firstSmall && n > 25)).toEqual([]);
  });

  it('keeps a first-contact backfill to a page waiting until `auto` learns the limit, then cuts by it', async () => {
    const h = await engine({ env: { PLATFORM_RATE_LIMIT: 'auto' } });
    const rows = companyRows(1_200).map(hubspotCells);
    h.writeJob('backfill', hubspotJob(h.writeCsv('big.csv', HUBSPOT_HEADER, rows)));
    await h.startWorkers();
    const id = await h.enqueue('backfill');
    // Nothing learned: it keeps two polls of writes at PLATFORM_RATE_LIMIT_MAX (200/s), a page
    // (500) at least, waiting, and stops after its first page (512 writes). Bound by
    // maxWaitingWrites (5,000), it would enqueue all 1,200 at once and never stop.
    let stoppedAt: number | undefined;
    const deadline = Date.now() + 30_000;
    for (;;) {
      const r = (await h.store.runs.get(id))!;
      stoppedAt = r.enqueueFrom;
      if (stoppedAt || (r.status !== 'queued' && r.status !== 'planning' && r.phase === 'waiting'))
        break;
      expect(Date.now(), 'the backfill has not started writing').toBeLessThan(deadline);
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(stoppedAt).toBeGreaterThan(0);
    expect((await h.store.runs.get(id))?.writeChunk).toBe(50);
    await learned(h, 100);
    const run = await h.waitForRun(id, { timeoutMs: 60_000 });
    expect(run.counts).toMatchObject({ created: 1_200, failed: 0 });
    // What it enqueued after the limit was learned is cut by it: a quarter second at 100/s.
    expect(run.writeChunk).toBe(25);
  });

  it('leaves its run slot while its queued writes are at their bound: a fifth job runs meanwhile', async () => {
    // 40/s: a backfill's first page of 500 writes drains for 11 s at least, and its second is
    // enqueued only once 50 or fewer of the first still wait.
    const h = await engine({
      env: { PLATFORM_RATE_LIMIT: '40' },
      settings: { maxWaitingWrites: 50 },
    });
    const names = ['b1', 'b2', 'b3', 'b4'];
    names.forEach((name, i) => {
      const rows = companyRows(600, 1_000_001 + i * 100_000).map(hubspotCells);
      h.writeJob(name, hubspotJob(h.writeCsv(`${name}.csv`, HUBSPOT_HEADER, rows)));
    });
    const small = companyRows(SMALL, 7_000_001).map(hubspotCells);
    h.writeJob('small', hubspotJob(h.writeCsv('small.csv', HUBSPOT_HEADER, small)));
    await h.startWorkers();

    // As many backfills as the worker has run slots, each planned and held at its bound.
    const ids = await Promise.all(names.map((n) => h.enqueue(n)));
    const backfills = () => Promise.all(ids.map(async (id) => (await h.store.runs.get(id))!));
    while ((await backfills()).some((r) => r.status !== 'writing')) {
      await new Promise((r) => setTimeout(r, 25));
    }
    // The fifth job's run starts (planning at once): the moment its record leaves `queued`,
    // every backfill is still enqueueing. A run held at its bound sleeps instead of keeping
    // one of the four slots; kept, the fifth job would wait until a backfill has enqueued its
    // last page, 11 s at least.
    const smallId = await h.enqueue('small');
    const deadline = Date.now() + 30_000;
    while ((await h.store.runs.get(smallId))?.status === 'queued') {
      expect(Date.now(), 'the fifth job is still queued').toBeLessThan(deadline);
      await new Promise((r) => setTimeout(r, 10));
    }
    const atStart = await backfills();
    expect(atStart.map((r) => r.phase)).toEqual(names.map(() => 'enqueueing'));

    // The rest is not the point: the backfills are cancelled (the small job may have completed).
    await Promise.all([...ids, smallId].map((id) => cancelRun({ store: h.store }, id)));
    for (const id of ids) {
      expect((await h.waitForRun(id, { timeoutMs: 30_000 })).status).toBe('cancelled');
    }
    await h.waitForRun(smallId, { timeoutMs: 30_000 });
  });

  it("keeps a run's own waiting writes under maxWaitingWrites, a page of 500 more at most, and goes on from where it stopped", async () => {
    const h = await engine({ settings: { maxWaitingWrites: 50 } });
    const path = h.writeCsv('big.csv', HUBSPOT_HEADER, companyRows(1_000).map(hubspotCells));
    h.writeJob('backfill', hubspotJob(path));
    const service = await h.startWorkers();
    let most = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const waiting = await service.writeQueue.getPrioritized(0, -1);
        most = Math.max(
          most,
          waiting.reduce((n, j) => n + j.data.lines.length, 0),
        );
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    const run = await h.runJob('backfill');
    sampling = false;
    await sampler;
    expect(run.counts).toMatchObject({ created: 1_000, failed: 0 });
    // The run adds a page (500 writes, in chunks cut within the plan's) only while 50 or fewer wait.
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(50 + 500);

    // Held at its bound, the run kept the plan line it got to and went on from there: no chunk
    // was offered to the queue twice (BullMQ notes a job id added again as `duplicated`).
    expect(run.enqueueFrom).toBeGreaterThan(0);
    const events = await h.store.connection.xrange(service.writeQueue.keys.events!, '-', '+');
    const offered = (event: string) =>
      events.filter(([, f]) => f[1] === event && isWriteChunkOf(String(f[3]), run.id)).length;
    expect(offered('added')).toBeGreaterThanOrEqual(1_000 / 50);
    expect(offered('duplicated')).toBe(0);
  });
});

/**
 * A limit `auto` met, `ceiling` requests/s, put in the pacer's state as a
 * worker that met it would (the sandbox has no limit: nothing moves it
 * within a test).
 */
async function learned(h: EngineHarness, ceiling: number): Promise<void> {
  const mode = { kind: 'auto', start: 20, min: 1, max: 200 } as const;
  const earlier = new RedisPacer({ redis: h.store.connection, prefix: h.prefix, mode });
  await earlier.start();
  earlier.stop();
  const rate = Math.floor(ceiling * 0.97);
  // Met just now (no probe due for a while), and a new version: the pacer of a running
  // worker takes the state up instead of writing its own over it.
  await h.store.connection
    .multi()
    .hset(pacerKey(h.prefix), { rate, ceiling, ceilingAt: Date.now(), source: 'limited' })
    .hincrby(pacerKey(h.prefix), 'v', 1)
    .exec();
}

/**
 * A 600-row backfill at a limit of 20/s, and a 5-row job enqueued once 10
 * of its writes settled: the backfill's writes settled between the small
 * job's start of writing and its first settled write. The backfill is then
 * cancelled, and the small job completes.
 */
async function writesAheadOfSmallJob(h: EngineHarness): Promise<number> {
  const big = h.writeCsv('big.csv', HUBSPOT_HEADER, companyRows(600).map(hubspotCells));
  const small = h.writeCsv(
    'small.csv',
    HUBSPOT_HEADER,
    companyRows(5, 7_000_001).map(hubspotCells),
  );
  h.writeJob('backfill', hubspotJob(big));
  h.writeJob('small', hubspotJob(small));
  await h.startWorkers();
  const backfillId = await h.enqueue('backfill');
  const settled = async (id: string) => (await h.store.runs.get(id))?.counts.writesSettled ?? 0;
  while ((await settled(backfillId)) < 10) await new Promise((r) => setTimeout(r, 25));
  expect((await h.store.runs.get(backfillId))?.writeChunk).toBe(5);

  const smallId = await h.enqueue('small');
  const deadline = Date.now() + 30_000;
  let atWriting: number | undefined;
  for (;;) {
    const r = (await h.store.runs.get(smallId))!;
    if (atWriting === undefined && r.status === 'writing') atWriting = await settled(backfillId);
    if (r.counts.writesSettled > 0) break;
    expect(Date.now(), 'the small job has written nothing').toBeLessThan(deadline);
    await new Promise((r) => setTimeout(r, 10));
  }
  const before = (await settled(backfillId)) - atWriting!;

  await cancelRun({ store: h.store }, backfillId);
  expect((await h.waitForRun(backfillId, { timeoutMs: 30_000 })).status).toBe('cancelled');
  const done = await h.waitForRun(smallId, { timeoutMs: 30_000 });
  expect(done.counts).toMatchObject({ created: 5, failed: 0 });
  return before;
}
