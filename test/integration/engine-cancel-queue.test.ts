/**
 * A cancel clears the run's write chunks out of the queue: chunks still
 * waiting behind another run's are removed (the queue holds no dead jobs),
 * the other run's chunks stay, chunks a worker holds settle, both runs end
 * `cancelled` with counts that add up, and retries of both write the rest
 * once.
 */
import type { Queue } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { cancelRun, jobLoader, retryRun } from '../../src/engine/run-service.js';
import { sleep } from '../../src/sleep.js';
import { RUN_OUTCOMES, type RunRecord } from '../../src/state/runs.js';
import {
  companyRows,
  countRequests,
  countWrites,
  hubspotCells,
  hubspotJob,
  HUBSPOT_HEADER,
  statsSince,
  useEngines,
  type EngineHarness,
} from '../harness/engine.js';

const engine = useEngines();
const FIRST = 100;
const SECOND = 60;
const CHUNK = 10;

/** Waits until the run has enqueued all its writes (or ended). */
async function untilEnqueued(h: EngineHarness, runId: string): Promise<RunRecord> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const run = (await h.store.runs.get(runId))!;
    if (run.status === 'writing' && run.phase === 'waiting') return run;
    expect(Date.now(), `run ${runId} still ${run.status} ${run.phase}`).toBeLessThan(deadline);
    await sleep(25);
  }
}

/** The run ids of the chunks not started yet, one entry per chunk (read from their data). */
async function notStarted(queue: Queue): Promise<string[]> {
  const jobs = await queue.getJobs(['wait', 'prioritized', 'delayed']);
  return jobs.map((j) => String((j.data as { runId: string }).runId));
}

/** Every row read ends in one outcome, or among the writes the cancel kept from being sent. */
function expectCountsAddUp(run: RunRecord): void {
  const c = run.counts;
  const outcomes = RUN_OUTCOMES.reduce((n, o) => n + c[o], 0);
  expect(outcomes + (c.writesPlanned - c.writesSettled), JSON.stringify(c)).toBe(c.read);
}

describe('engine: a cancel removes its waiting write chunks', () => {
  it('removes only its waiting chunks, lets active ones settle, and both runs can be retried', async () => {
    // Two writes at a time, 100 ms each: the first run's 10 chunks hold the queue for seconds.
    const h = await engine({
      sandbox: { latencyMs: 100 },
      env: { WRITE_CONCURRENCY: '2' },
      settings: { writeChunk: CHUNK },
    });
    const first = h.writeCsv('first.csv', HUBSPOT_HEADER, companyRows(FIRST).map(hubspotCells));
    const second = h.writeCsv(
      'second.csv',
      HUBSPOT_HEADER,
      companyRows(SECOND, 6_000_001).map(hubspotCells),
    );
    h.writeJob('first', hubspotJob(first));
    h.writeJob('second', hubspotJob(second));
    const queue = h.service!.writeQueue as Queue;

    const a = await h.enqueue('first');
    await untilEnqueued(h, a);
    const b = await h.enqueue('second');
    await untilEnqueued(h, b);
    // The second run's chunks all wait behind the first's.
    const waiting = await notStarted(queue);
    expect(waiting.filter((id) => id === b)).toHaveLength(SECOND / CHUNK);
    expect(waiting.filter((id) => id === a).length).toBeGreaterThan(0);

    expect(await cancelRun({ store: h.store }, b)).toEqual({ runId: b, status: 'writing' });
    const cancelledB = await h.waitForRun(b, { timeoutMs: 5_000 });
    expect(cancelledB.status).toBe('cancelled');
    // Its chunks are gone from the queue; the first run's are still there.
    const left = await notStarted(queue);
    expect(left.filter((id) => id === b)).toEqual([]);
    expect(left.filter((id) => id === a).length).toBeGreaterThan(0);
    expect(cancelledB.counts).toMatchObject({
      read: SECOND,
      created: 0,
      writesPlanned: SECOND,
      writesSettled: 0,
    });
    expectCountsAddUp(cancelledB);
    expect((await h.dump()).companies.filter((c) => Number(c.crm_company_id) >= 6_000_001)).toEqual(
      [],
    );

    // The first run, cancelled with writes in flight: those settle, its waiting chunks go.
    expect(await cancelRun({ store: h.store }, a)).toEqual({ runId: a, status: 'writing' });
    const cancelledA = await h.waitForRun(a, { timeoutMs: 10_000 });
    expect(cancelledA.status).toBe('cancelled');
    const atEnd = await h.stats();
    const posted = countRequests(atEnd, 'POST', '/companies');
    expect(countRequests(atEnd, 'POST', '/companies', 200)).toBe(posted);
    expect(cancelledA.counts.created).toBe(posted);
    expect(cancelledA.counts.writesSettled).toBe(posted);
    expect(posted).toBeLessThan(FIRST);
    expectCountsAddUp(cancelledA);
    expect(await notStarted(queue)).toEqual([]);
    expect(await queue.getJobCountByTypes('active')).toBe(0);
    expect((await h.dump()).companies).toHaveLength(posted);

    // Nothing more reaches the platform; retries write the rest, each record once.
    await sleep(300);
    expect(countWrites(statsSince(atEnd, await h.stats()))).toBe(0);
    h.sandbox.setFaults({ latencyMs: 0 });
    const deps = { ...h.producer, loadJob: jobLoader(h.config, h.jobsDir) };
    const restB = await h.waitForRun((await retryRun(deps, b)).runId);
    expect(restB.status).toBe('completed');
    expect(restB.counts).toMatchObject({ read: SECOND, created: SECOND });
    const restA = await h.waitForRun((await retryRun(deps, a)).runId);
    expect(restA.status).toBe('completed');
    expect(restA.counts).toMatchObject({
      read: FIRST,
      created: FIRST - posted,
      unchanged: posted,
    });
    const ids = (await h.dump()).companies.map((c) => String(c.external_id));
    expect(ids).toHaveLength(FIRST + SECOND);
    expect(new Set(ids).size).toBe(FIRST + SECOND);
  }, 60_000);
});
