/**
 * Cancelling a run while it is finalizing (verifying creates whose outcome
 * was unknown with a listing): the listing stops, the run ends `cancelled`
 * with its counts and says how many creates are left to verify, nothing is
 * written after the cancel, and a retry adopts the creates that landed
 * without sending them again. Past the point of no return (`markCompleting`:
 * every write settled and verified) a cancel is refused, and a cancel asked
 * for before it wins.
 */
import { describe, expect, it } from 'vitest';
import {
  cancelRun,
  jobLoader,
  retryRun,
  RunCompletingError,
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
} from '../harness/engine.js';
import type { StatsEntry } from '@crm-sync/platform-sandbox';

const engine = useEngines();
const ROWS = 60;
// Two records a page: the verification listing of 60 records takes 30 pages.
const PAGE = 2;

describe('engine: cancelling a finalizing run', () => {
  it('stops the verification listing, ends cancelled, and a retry adopts what landed', async () => {
    // A share of the creates land but their answer is cut: finalize must list to verify them.
    const h = await engine({
      sandbox: { dropAfterCommit: 0.3, seed: 11, pageSize: PAGE, latencyMs: 40 },
      env: { WRITE_CONCURRENCY: '8' },
    });
    const path = h.writeCsv('companies.csv', HUBSPOT_HEADER, companyRows(ROWS).map(hubspotCells));
    h.writeJob('companies', hubspotJob(path));
    const runId = await h.enqueue('companies');
    let atCancel: StatsEntry[] | undefined;
    let index: Awaited<ReturnType<typeof h.store.index.info>> | undefined;
    const run = await h.waitForRun(runId, {
      timeoutMs: 30_000,
      onPoll: async (r) => {
        if (atCancel === undefined && r.status === 'finalizing') {
          atCancel = await h.stats();
          index = await h.store.index.info('companies');
          expect(await cancelRun({ store: h.store }, runId)).toEqual({
            runId,
            status: 'finalizing',
          });
        }
      },
    });
    expect(atCancel).toBeDefined();
    const end = await h.stats();

    // Every create landed; those whose answer was cut are the ones left unverified.
    const dropped = countRequests(end, 'POST', '/companies', 0);
    expect(dropped).toBeGreaterThan(0);
    const held = (await h.dump()).companies.length;
    expect(held).toBe(ROWS);
    expect(run.status).toBe('cancelled');
    expect(run.phase).toBe(
      `cancelled while finalizing; ${dropped} create(s) of unknown outcome, verified by the next run`,
    );
    expect(run.counts).toMatchObject({
      read: ROWS,
      created: ROWS - dropped,
      writesPlanned: ROWS,
      writesSettled: ROWS,
      failed: 0,
      rejected: 0,
    });

    // The listing stopped: a full one is 30 pages; only the few the cancel took to be seen went after
    // (it is read every 50 ms, a page takes 40).
    const after = statsSince(atCancel!, end);
    expect(countRequests(after, 'GET', '/companies')).toBeLessThanOrEqual(6);
    expect(countWrites(after)).toBe(0);
    // The stopped listing left the index as planning listed it.
    expect(index).toBeDefined();
    expect(await h.store.index.info('companies')).toEqual(index);

    // A retry lists the platform, adopts the creates that landed, and sends no create again.
    h.sandbox.setFaults({ dropAfterCommit: 0, latencyMs: 0 });
    const retried = await retryRun(
      { ...h.producer, loadJob: jobLoader(h.config, h.jobsDir) },
      runId,
    );
    const rest = await h.waitForRun(retried.runId, { timeoutMs: 30_000 });
    expect(rest.status).toBe('completed');
    expect(rest.counts).toMatchObject({
      read: ROWS,
      created: 0,
      adopted: dropped,
      unchanged: ROWS - dropped,
    });
    expect(countWrites(statsSince(end, await h.stats()))).toBe(0);
    const ids = (await h.dump()).companies.map((c) => String(c.external_id));
    expect(new Set(ids).size).toBe(ROWS);
    expect(ids).toHaveLength(ROWS);
  }, 60_000);

  it('refuses a cancel once the run is completing; a cancel asked for before wins', async () => {
    const h = await engine({ deferWorkers: true });
    const run = () =>
      h.store.runs.create({
        job: 'companies',
        entity: 'companies',
        mode: 'upsert',
        source: 'c.csv',
      });

    // Past the point of no return: the cancel is refused and the run is left as it was.
    const completing = await run();
    await h.store.runs.update(completing, { status: 'finalizing', phase: 'verifying creates' });
    expect(await h.store.runs.markCompleting(completing)).toBe(true);
    await expect(cancelRun({ store: h.store }, completing)).rejects.toBeInstanceOf(
      RunCompletingError,
    );
    const left = (await h.store.runs.get(completing))!;
    expect(left.status).toBe('finalizing');
    expect(left.cancelRequested).toBeUndefined();
    // Marking again (a finalize resumed after a crash) still completes.
    expect(await h.store.runs.markCompleting(completing)).toBe(true);

    // A cancel first: the finalize may not complete the run.
    const cancelled = await run();
    await h.store.runs.update(cancelled, { status: 'finalizing', phase: 'verifying creates' });
    expect(await cancelRun({ store: h.store }, cancelled)).toEqual({
      runId: cancelled,
      status: 'finalizing',
    });
    expect(await h.store.runs.markCompleting(cancelled)).toBe(false);

    // A run record that is gone is not made again as a hash with one field.
    expect(await h.store.runs.markCompleting('gone-run')).toBe(true);
    expect(await h.store.runs.get('gone-run')).toBeNull();
  });
});
