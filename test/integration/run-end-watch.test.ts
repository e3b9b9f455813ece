/**
 * A caller waiting for a run (`crm-sync run --wait`) is woken by its job's
 * end on the runs queue's events stream: it reads the ended record then,
 * not at its next poll.
 */
import { describe, expect, it } from 'vitest';
import { waitForRun } from '../../src/engine/run-summary.js';
import { watchRunEnd } from '../../src/queue/run-end-watch.js';
import {
  companyRows,
  hubspotCells,
  hubspotJob,
  HUBSPOT_HEADER,
  useEngines,
} from '../harness/engine.js';

const engine = useEngines();
/** Longer than the test may take: only a wake-up ends a wait in time. */
const POLL_MS = 120_000;

describe('waiting for a run, woken by its end', () => {
  it('returns the ended run as its job ends, whatever the poll interval', async () => {
    const h = await engine();
    const path = h.writeCsv('companies.csv', HUBSPOT_HEADER, companyRows(20).map(hubspotCells));
    h.writeJob('companies', hubspotJob(path));
    h.writeJob('others', hubspotJob(path));
    await h.startWorkers();
    const runId = await h.enqueue('companies');
    const ends = await watchRunEnd(h.producer.redis, h.config.prefix, runId);
    try {
      const seen: string[] = [];
      const started = Date.now();
      const run = await waitForRun(h.store, runId, {
        pollMs: POLL_MS,
        wake: (ms) => ends.wait(ms),
        onPoll: (r) => void seen.push(r.status),
      });
      expect(run).toMatchObject({ status: 'completed', counts: { created: 20 } });
      // It was going when first read, and waited for its end.
      expect(seen.length).toBeGreaterThan(0);
      expect(Date.now() - started).toBeLessThan(POLL_MS);

      // Another run's end does not cut a wait short: the wait runs its time.
      const other = await h.enqueue('others');
      expect((await h.waitForRun(other)).status).toBe('completed');
      const t0 = Date.now();
      await ends.wait(300);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(290);

      // A watch reads from the stream's last entry when it starts: the end
      // already in the stream is not news to it.
      const late = await watchRunEnd(h.producer.redis, h.config.prefix, runId);
      try {
        const t1 = Date.now();
        await late.wait(500);
        expect(Date.now() - t1).toBeGreaterThanOrEqual(490);
      } finally {
        await late.close();
      }
    } finally {
      await ends.close();
    }
  }, 30_000);
});
