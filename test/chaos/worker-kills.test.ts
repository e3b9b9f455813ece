/**
 * Chaos: worker processes SIGKILLed at seeded random moments of a 2,000-row
 * sync (three kills once a random share of the writes has reached the
 * platform: the writer, a random worker, the writer again), a fresh worker
 * started after each. A killed writer's lease lapses and another process
 * writes on; the killed workers' jobs stall and move on after
 * WORKER_LOCK_MS; the run must complete with the platform holding every
 * valid row exactly once.
 */
import { describe, expect, it } from 'vitest';
import {
  expectSecondRunWritesNothing,
  expectSynced,
  requests,
  sandboxStats,
  seededRandom,
  useChaos,
} from '../harness/chaos.js';

const chaos = useChaos();

describe('chaos: worker processes SIGKILLed mid-run', () => {
  it('three kills at seeded moments: every valid row lands once, a second run writes nothing', async () => {
    const c = await chaos({ sandbox: { latencyMs: 10, seed: 11 } });
    const random = seededRandom(20261122);
    // Kill points as shares of the valid rows POSTed, increasing, spread over the run.
    const points = [0.1 + 0.2 * random(), 0.35 + 0.2 * random(), 0.6 + 0.25 * random()].map(
      (share) => Math.round(share * c.expected.valid.size),
    );
    await c.startWorker();
    await c.startWorker();
    const runId = await c.enqueue();

    let kills = 0;
    let busy = false;
    const run = await c.waitForRun(runId, {
      onPoll: async () => {
        if (busy || kills >= points.length) return;
        const posts = requests(await sandboxStats(c), 'POST', '/companies');
        if (posts < points[kills]!) return;
        busy = true;
        await c.killWorker(
          kills === 1 ? Math.floor(random() * c.workers.length) : await c.writerIndex(),
        );
        kills++;
        await c.startWorker();
        busy = false;
      },
    });
    expect(kills, 'kills done before the run ended').toBe(points.length);
    await expectSynced(c, run);
    await expectSecondRunWritesNothing(c);
  });
});
