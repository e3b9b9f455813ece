/**
 * Chaos: a platform that misbehaves in every way the sandbox can, while two
 * worker processes write a 2,000-row sync: 20% of requests answered 503, 10%
 * of committed writes cut before the answer (outcome unknown to the client),
 * then, as writes progress, a burst of 429s (the sandbox's limit dropped far
 * below ours for a few seconds) and a latency spike (500 ms per answer for a
 * while). Every valid row must land exactly once, every field right.
 */
import { describe, expect, it } from 'vitest';
import {
  expectSecondRunWritesNothing,
  expectSynced,
  requests,
  sandboxStats,
  sleep,
  useChaos,
} from '../harness/chaos.js';

const chaos = useChaos();

describe('chaos: 503s, dropped answers, 429 bursts and latency spikes', () => {
  it('the run completes with every valid row once, and a second run writes nothing', async () => {
    const c = await chaos({
      sandbox: { latencyMs: 10, faultRate: 0.2, dropAfterCommit: 0.1, seed: 13 },
    });
    await c.startWorker();
    await c.startWorker();
    const runId = await c.enqueue();

    const rows = c.expected.valid.size;
    const steps: { at: number; act: () => Promise<void> }[] = [
      {
        at: rows * 0.2,
        act: async () => {
          c.sandbox.setFaults({ rateLimit: 20 });
          await sleep(3_000);
          c.sandbox.setFaults({ rateLimit: 0 });
        },
      },
      {
        at: rows * 0.5,
        act: async () => {
          c.sandbox.setFaults({ latencyMs: 500 });
          await sleep(3_000);
          c.sandbox.setFaults({ latencyMs: 10 });
        },
      },
    ];
    let done = 0;
    let busy = false;
    const run = await c.waitForRun(runId, {
      onPoll: async () => {
        const step = steps[done];
        if (busy || !step) return;
        if (requests(await sandboxStats(c), 'POST', '/companies', 200) < step.at) return;
        busy = true;
        await step.act();
        done++;
        busy = false;
      },
    });
    expect(done, 'fault steps done before the run ended').toBe(steps.length);

    // The faults did happen: 503s, cut answers (status 0 in the stats) and 429s.
    const stats = await sandboxStats(c);
    expect(requests(stats, 'POST', '/companies', 503)).toBeGreaterThan(rows * 0.1);
    expect(requests(stats, 'POST', '/companies', 0)).toBeGreaterThan(rows * 0.03);
    expect(stats.filter((e) => e.status === 429).length).toBeGreaterThan(0);

    await expectSynced(c, run);
    await expectSecondRunWritesNothing(c);
  });
});
