/**
 * The engine with a short run history (CRM_SYNC_RUN_HISTORY=1): the runs it
 * forgets must change nothing a later run decides. Rows left unchanged keep
 * the number of the run that last wrote them, long forgotten, and a run
 * forgotten while its queue job still sleeps must not start over when it wakes.
 */
import { describe, expect, it } from 'vitest';
import { failRun } from '../../src/engine/write.js';
import { createWriteQueue } from '../../src/queue/queues.js';
import {
  companyRows,
  countWrites,
  hubspotCells,
  hubspotJob,
  HUBSPOT_HEADER,
  statsSince,
  useEngines,
} from '../harness/engine.js';

const engine = useEngines();
const HISTORY_1 = { CRM_SYNC_RUN_HISTORY: '1' };

/** Polls `check` every 25 ms until it is true, failing after `ms`. */
async function until(what: string, check: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('engine: a run history of one', () => {
  it('reports as orphans the rows last written by a run the history forgot', async () => {
    const h = await engine({ env: HISTORY_1 });
    const rows = companyRows(10);
    const path = h.writeCsv('companies.csv', HUBSPOT_HEADER, rows.map(hubspotCells));
    h.writeJob('companies', hubspotJob(path));
    const first = await h.runJob('companies');
    expect(first.counts).toMatchObject({ created: 10, orphans: 0 });
    // Unchanged: nothing is committed again, so every record still names the first run.
    const second = await h.runJob('companies');
    expect(second.counts).toMatchObject({ unchanged: 10, orphans: 0 });
    expect(await h.store.runs.get(first.id)).toBeNull();

    h.writeCsv('companies.csv', HUBSPOT_HEADER, rows.slice(3).map(hubspotCells));
    const third = await h.runJob('companies');
    expect(third.status).toBe('completed');
    expect(third.counts).toMatchObject({ read: 7, unchanged: 7, orphans: 3 });
    expect((await h.store.runs.list({ job: 'companies' })).map((r) => r.id)).toEqual([third.id]);
  });

  it('leaves a run forgotten while its job slept forgotten when the job wakes', async () => {
    const h = await engine({ env: HISTORY_1, settings: { pollMs: 3_000 } });
    const rows = companyRows(3);
    const path = h.writeCsv('companies.csv', HUBSPOT_HEADER, rows.map(hubspotCells));
    h.writeJob('companies', hubspotJob(path));
    const queue = h.producer.runQueue;
    // Writes held back: run A's job goes to sleep in the delayed set, its writes unsettled.
    const writes = createWriteQueue({ connection: h.producer.redis, prefix: h.prefix });
    try {
      await writes.pause();
      const a = await h.enqueue('companies');
      await until('run A asleep, waiting for its writes', async () => {
        const run = await h.store.runs.get(a);
        return run?.phase === 'waiting' && (await queue.getJobState(a)) === 'delayed';
      });
      // Run A fails (as a 401 from a write fails it) while its job sleeps.
      await failRun(h.service!.ctx, a, 'the platform refused the API key');

      // Run B takes the job's slot and, with a history of one, forgets run A.
      const b = await h.enqueue('companies');
      expect(b).not.toBe(a);
      expect(await h.store.runs.get(a)).toBeNull();
      await writes.resume();
      expect(await h.waitForRun(b)).toMatchObject({ status: 'completed', counts: { created: 3 } });

      // The export changes; then run A's job wakes (now, if its writes have not woken it).
      h.writeCsv(
        'companies.csv',
        HUBSPOT_HEADER,
        rows.map((r) => hubspotCells({ ...r, name: `${r.name} (renamed)` })),
      );
      const before = await h.stats();
      if ((await queue.getJobState(a)) === 'delayed') await (await queue.getJob(a))!.promote();
      await until('run A job finished', async () =>
        ['completed', 'failed', 'unknown'].includes(await queue.getJobState(a)),
      );
      // Nothing planned, written or recorded for it again (planning would make its record anew).
      expect(await h.store.runs.get(a)).toBeNull();
      expect(countWrites(statsSince(before, await h.stats()))).toBe(0);
      expect((await h.store.runs.list({ job: 'companies' })).map((r) => r.id)).toEqual([b]);
    } finally {
      await writes.close();
    }
  });
});
