/**
 * Chaos, everything at once: a platform answering 20% of requests 503 and
 * cutting 10% of committed writes before the answer, while worker processes
 * are SIGKILLed at seeded moments (and replaced) and the Redis holding queues
 * and state is killed (SIGKILL: only the AOF, fsync always, survives) and
 * started again. The run must complete with every valid row exactly once.
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

describe('chaos: kills, a Redis restart, 503s and dropped answers together', () => {
  it('the run completes with every valid row once, and a second run writes nothing', async () => {
    const c = await chaos({
      sandbox: { latencyMs: 10, faultRate: 0.2, dropAfterCommit: 0.1, seed: 15 },
    });
    const random = seededRandom(15_2026);
    const rows = c.expected.valid.size;
    const killWorker = async () => {
      await c.killWorker(Math.floor(random() * c.workers.length));
      await c.startWorker();
    };
    // Seeded moments, as shares of the valid rows POSTed (whatever the answer).
    const steps = [
      { at: (0.05 + 0.15 * random()) * rows, act: killWorker },
      { at: (0.3 + 0.15 * random()) * rows, act: () => c.restartRedis({ hard: true }) },
      { at: (0.55 + 0.15 * random()) * rows, act: killWorker },
      { at: (0.75 + 0.1 * random()) * rows, act: killWorker },
    ];
    await c.startWorker();
    await c.startWorker();
    const runId = await c.enqueue();

    let done = 0;
    let busy = false;
    const run = await c.waitForRun(runId, {
      timeoutMs: 180_000,
      onPoll: async () => {
        const step = steps[done];
        if (busy || !step) return;
        if (requests(await sandboxStats(c), 'POST', '/companies') < step.at) return;
        busy = true;
        await step.act();
        done++;
        busy = false;
      },
    });
    expect(done, 'chaos steps done before the run ended').toBe(steps.length);
    await expectSynced(c, run);
    await expectSecondRunWritesNothing(c);
  });
});
