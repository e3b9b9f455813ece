/**
 * Chaos: the Redis holding the queues and sync state (AOF, fsync always)
 * stopped while two worker processes write a 2,000-row sync, down for a
 * second, then started again on the same port and data. The workers wait,
 * reconnect and finish; the platform holds every valid row exactly once.
 */
import { describe, expect, it } from 'vitest';
import {
  expectSecondRunWritesNothing,
  expectSynced,
  requests,
  sandboxStats,
  useChaos,
} from '../harness/chaos.js';

const chaos = useChaos();

describe('chaos: Redis restarted mid-run', () => {
  it('the run completes with every valid row once, and a second run writes nothing', async () => {
    const c = await chaos({ sandbox: { latencyMs: 10, seed: 12 } });
    await c.startWorker();
    await c.startWorker();
    const runId = await c.enqueue();

    let restarted = false;
    let postsAtRestart = 0;
    const run = await c.waitForRun(runId, {
      onPoll: async () => {
        if (restarted) return;
        postsAtRestart = requests(await sandboxStats(c), 'POST', '/companies');
        if (postsAtRestart < c.expected.valid.size / 3) return;
        restarted = true;
        await c.restartRedis({ downMs: 1_000 });
      },
    });
    expect(restarted).toBe(true);
    expect(postsAtRestart).toBeLessThan(c.expected.valid.size);
    // Both workers lived through it.
    expect(c.workers).toHaveLength(2);
    for (const w of c.workers) {
      expect(w.stderr.some((l) => l.includes('Redis connection restored'))).toBe(true);
    }
    await expectSynced(c, run);
    await expectSecondRunWritesNothing(c);
  });
});
