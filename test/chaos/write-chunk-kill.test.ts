/**
 * Chaos: the window chunked writes open. A `platform-writes` job carries a
 * chunk of planned writes sent concurrently, so a worker killed while it
 * holds one leaves the chunk half sent: some lines settled, some creates
 * claimed and in flight (outcome unknown), the rest not begun. The worker
 * is SIGKILLed at exactly such a moment; another worker takes the stalled
 * chunk over. Every record must land exactly once: the settled lines are
 * not sent again, the in-flight creates stay pending until the run's
 * verification lists the platform, and the rest are sent by the new holder.
 */
import { describe, expect, it } from 'vitest';
import { QueueName } from '../../src/queue/queues.js';
import {
  expectSecondRunWritesNothing,
  expectSynced,
  requests,
  sandboxStats,
  useChaos,
  type Chaos,
} from '../harness/chaos.js';

const chaos = useChaos();

interface HalfSent {
  jobId: string;
  settled: number;
  unsettled: number;
}

/** An active chunk of the run with some lines settled and some not, while creates are pending. */
async function halfSentChunk(c: Chaos, runId: string): Promise<HalfSent | undefined> {
  const queue = `${c.prefix}:${QueueName.writes}`;
  const active = await c.redis.lrange(`${queue}:active`, 0, -1);
  const pending = (await c.store.records.listPending('companies')).filter((p) => p.runId === runId);
  if (pending.length === 0) return undefined;
  for (const jobId of active) {
    const data = await c.redis.hget(`${queue}:${jobId}`, 'data');
    if (!data) continue;
    const lines = (JSON.parse(data) as { lines: number[] }).lines;
    const flags = await c.redis.smismember(c.store.keys.settled(runId), ...lines.map(String));
    const settled = flags.filter((f) => f === 1).length;
    if (settled > 0 && settled < lines.length) {
      return { jobId, settled, unsettled: lines.length - settled };
    }
  }
  return undefined;
}

describe('chaos: a worker SIGKILLed in the middle of a chunk of writes', () => {
  it('the chunk is resumed by another worker: every row lands once, the creates in flight verified by listing', async () => {
    const c = await chaos({
      sandbox: { latencyMs: 150, seed: 23 },
      // Many creates in flight in each chunk, and a run that lasts a few seconds.
      env: { PLATFORM_RATE_LIMIT: 200, WRITE_CONCURRENCY: 30 },
    });
    await c.startWorker();
    const runId = await c.enqueue();
    const gets = async () => requests(await sandboxStats(c), 'GET', '/companies');

    let killed: (HalfSent & { listingsBefore: number }) | undefined;
    let busy = false;
    const run = await c.waitForRun(runId, {
      onPoll: async () => {
        if (busy || killed) return;
        busy = true;
        const half = await halfSentChunk(c, runId);
        if (half) {
          const listingsBefore = await gets();
          await c.killWorker(0);
          killed = { ...half, listingsBefore };
          await c.startWorker();
        }
        busy = false;
      },
    });
    expect(killed, 'a worker killed while a chunk was half sent').toBeDefined();
    expect(killed!.settled).toBeGreaterThan(0);
    expect(killed!.unsettled).toBeGreaterThan(0);
    // The chunk was finished by the new worker: BullMQ completed it, not failed it.
    const queue = `${c.prefix}:${QueueName.writes}`;
    expect(await c.redis.zscore(`${queue}:completed`, killed!.jobId)).not.toBeNull();
    // The creates in flight when the worker died were verified by listing the platform.
    expect(await gets()).toBeGreaterThan(killed!.listingsBefore);
    expect(
      (await c.store.records.listPending('companies')).filter((p) => p.runId === runId),
    ).toEqual([]);
    await expectSynced(c, run);
    await expectSecondRunWritesNothing(c);
  });
});
