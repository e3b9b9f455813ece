/**
 * Chaos: a worker process frozen (SIGSTOP) past its job locks, as a long GC
 * pause or a starved CPU would freeze it, while another worker takes over
 * its stalled jobs; then it wakes up (SIGCONT) in the middle of the writes
 * it had started. Whatever it was doing, no record may be created twice: a
 * woken attempt whose job has moved on must not send its create.
 */
import { describe, expect, it } from 'vitest';
import {
  expectSecondRunWritesNothing,
  expectSynced,
  requests,
  sandboxStats,
  useChaos,
} from '../harness/chaos.js';

const LOCK_MS = 2_500;

const chaos = useChaos();

describe('chaos: a worker frozen past its locks, then woken', () => {
  it('two pauses: every valid row lands once, and a second run writes nothing', async () => {
    const c = await chaos({
      sandbox: { latencyMs: 10, seed: 16 },
      // A slower write rate, so that the run outlasts two pauses of ~3 locks each.
      env: { WORKER_LOCK_MS: LOCK_MS, PLATFORM_RATE_LIMIT: 80, WRITE_CONCURRENCY: 40 },
    });
    await c.startWorker();
    await c.startWorker();
    const runId = await c.enqueue();
    const rows = c.expected.valid.size;
    const posts = async () => requests(await sandboxStats(c), 'POST', '/companies');

    const points = [rows * 0.1, rows * 0.45];
    let pauses = 0;
    let busy = false;
    const run = await c.waitForRun(runId, {
      onPoll: async () => {
        if (busy || pauses >= points.length || (await posts()) < points[pauses]!) return;
        busy = true;
        const frozenAt = Date.now();
        const before = await posts();
        // Resume once the locks have expired, the stalled check has run and the
        // other worker has written on: the frozen one's jobs are in other hands.
        // The writer: the one holding chunks (the other stands by, src/queue/writer-lease.ts).
        await c.pauseWorker(
          await c.writerIndex(),
          async () => Date.now() - frozenAt > 3 * LOCK_MS && (await posts()) > before + 100,
        );
        pauses++;
        busy = false;
      },
    });
    expect(pauses, 'pauses done before the run ended').toBe(points.length);
    await expectSynced(c, run);
    await expectSecondRunWritesNothing(c);
  });
});
