/**
 * Cancelling a run (`cancelRun`, as `crm-sync cancel` and the API ask it):
 * mid-write against a slow platform, the writes in flight settle, nothing is
 * sent after the run ended, the run ends `cancelled` with counts that match
 * what the platform holds, and a retry writes the rest without a duplicate
 * create. Cancelled while planning, planning stops and nothing is written.
 * A run no worker has taken ends at once and never writes; a run
 * that has ended, or no run, refuses the cancel.
 */
import { describe, expect, it } from 'vitest';
import {
  cancelRun,
  jobLoader,
  NoSuchRunError,
  retryRun,
  RunEndedError,
} from '../../src/engine/run-service.js';
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
const ROWS = 300;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function writeCompanies(h: EngineHarness): void {
  const path = h.writeCsv('companies.csv', HUBSPOT_HEADER, companyRows(ROWS).map(hubspotCells));
  h.writeJob('companies', hubspotJob(path));
}

/** The external ids the platform holds, each once (a duplicate create shows as a repeat). */
async function heldIds(h: EngineHarness): Promise<string[]> {
  return (await h.dump()).companies.map((c) => String(c.external_id));
}

describe('engine: cancelling a run', () => {
  it('mid-write: in-flight writes settle, nothing more is sent, a retry writes the rest once', async () => {
    // Six writes in flight at a time, each 300 ms (longer than the run job's poll):
    // about 20 writes a second, the cancel comes after 40 with writes in flight.
    const h = await engine({ sandbox: { latencyMs: 300 }, env: { WRITE_CONCURRENCY: '6' } });
    writeCompanies(h);
    const runId = await h.enqueue('companies');
    let cancelledAt: { settled: number; status: string } | undefined;
    const run = await h.waitForRun(runId, {
      timeoutMs: 30_000,
      onPoll: async (r) => {
        if (cancelledAt === undefined && r.counts.writesSettled >= 40) {
          const taken = await cancelRun({ store: h.store }, runId);
          cancelledAt = { settled: r.counts.writesSettled, status: taken.status };
        }
      },
    });
    expect(cancelledAt?.status).toBe('writing');
    expect(run.status).toBe('cancelled');
    expect(run.cancelRequested).toBeGreaterThan(0);
    expect(run.finishedAt).toBeGreaterThanOrEqual(run.cancelRequested!);

    // Its counts are what the platform holds: every write sent settled, none failed.
    const stats = await h.stats();
    const posted = countRequests(stats, 'POST', '/companies');
    expect(countRequests(stats, 'POST', '/companies', 200)).toBe(posted);
    expect(run.counts.created).toBe(posted);
    expect(run.counts.writesSettled).toBe(posted);
    expect(run.counts.failed + run.counts.rejected).toBe(0);
    expect(run.counts.writesPlanned).toBe(ROWS);
    expect(run.counts.created).toBeGreaterThanOrEqual(cancelledAt!.settled);
    // Only the writes in flight at the cancel went after it: far from the whole export.
    expect(run.counts.created).toBeLessThan(cancelledAt!.settled + 25);
    expect(await heldIds(h)).toHaveLength(posted);

    // Nothing reaches the platform after the run ended (chunks still queued are skipped).
    await sleep(1_500);
    const writeQueue = h.service!.writeQueue;
    expect(await writeQueue.getJobCountByTypes('wait', 'active', 'delayed')).toBe(0);
    expect(countWrites(statsSince(stats, await h.stats()))).toBe(0);
    // The run ended with its writes settled: its counts did not move since.
    const later = (await h.store.runs.get(runId))!;
    expect(later.status).toBe('cancelled');
    expect(later.counts).toEqual(run.counts);

    // A cancelled run has ended: a second cancel is refused; a retry writes the rest.
    await expect(cancelRun({ store: h.store }, runId)).rejects.toBeInstanceOf(RunEndedError);
    h.sandbox.setFaults({ latencyMs: 0 });
    const retried = await retryRun(
      { ...h.producer, loadJob: jobLoader(h.config, h.jobsDir) },
      runId,
    );
    const rest = await h.waitForRun(retried.runId, { timeoutMs: 45_000 });
    expect(rest.status).toBe('completed');
    expect(rest.counts.created).toBe(ROWS - run.counts.created);
    expect(rest.counts.unchanged).toBe(run.counts.created);
    const ids = await heldIds(h);
    expect(ids).toHaveLength(ROWS);
    expect(new Set(ids).size).toBe(ROWS);
    expect(countRequests(await h.stats(), 'POST', '/companies')).toBe(ROWS);
  }, 90_000);

  it('while planning: planning stops where it is, nothing is written', async () => {
    const h = await engine();
    const big = 20_000;
    const path = h.writeCsv('companies.csv', HUBSPOT_HEADER, companyRows(big).map(hubspotCells));
    h.writeJob('companies', hubspotJob(path));
    const runId = await h.enqueue('companies');
    let asked = false;
    const run = await h.waitForRun(runId, {
      onPoll: async (r) => {
        if (!asked && r.status === 'planning' && r.counts.read > 0) {
          asked = true;
          expect(await cancelRun({ store: h.store }, runId)).toEqual({ runId, status: 'planning' });
        }
      },
    });
    expect(asked).toBe(true);
    expect(run.status).toBe('cancelled');
    expect(run.phase).toBe('cancelled while planning');
    // Stopped before the end of the export: its rows are never all read.
    expect(run.counts.read).toBeLessThan(big);
    expect(run.counts.writesSettled).toBe(0);
    await sleep(500);
    expect(countWrites(await h.stats())).toBe(0);
  }, 60_000);

  it('a run no worker has taken ends cancelled at once and never writes; unknown runs refuse', async () => {
    const h = await engine({ deferWorkers: true });
    writeCompanies(h);
    const runId = await h.enqueue('companies');
    expect(await cancelRun({ store: h.store }, runId)).toEqual({ runId, status: 'cancelled' });
    const ended = (await h.store.runs.get(runId))!;
    expect(ended.status).toBe('cancelled');
    expect(ended.finishedAt).toBeDefined();

    // The worker takes its queue job later and leaves it as it is.
    const service = await h.startWorkers();
    const deadline = Date.now() + 10_000;
    while ((await service.runQueue.getJobCountByTypes('wait', 'active', 'delayed')) > 0) {
      expect(Date.now()).toBeLessThan(deadline);
      await sleep(50);
    }
    await sleep(300);
    const later = (await h.store.runs.get(runId))!;
    expect(later.status).toBe('cancelled');
    expect(later.counts).toEqual(ended.counts);
    expect(later.counts.read).toBe(0);
    expect(countWrites(await h.stats())).toBe(0);

    await expect(cancelRun({ store: h.store }, runId)).rejects.toBeInstanceOf(RunEndedError);
    await expect(cancelRun({ store: h.store }, 'no-such-run')).rejects.toBeInstanceOf(
      NoSuchRunError,
    );
    // A new run of the job is not held up by the cancelled one.
    const next = await h.runJob('companies');
    expect(next.id).not.toBe(runId);
    expect(next.status).toBe('completed');
    expect(next.counts.created).toBe(ROWS);
  }, 60_000);
});
