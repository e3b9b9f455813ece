/**
 * Chaos: a Sentinel-managed primary (one replica, three sentinels with
 * `down-after-milliseconds` 1 s) SIGKILLed while two worker processes write
 * a 2,000-row sync. Sentinel promotes the replica; the workers, connected
 * through the sentinels (REDIS_SENTINELS, REDIS_SENTINEL_NAME), find the new
 * primary and finish the run, with every valid row on the platform once and
 * a second run that writes nothing.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { expectSyncThroughRedisFault, useChaos } from '../harness/chaos.js';
import { startRedisSentinel, type RedisSentinelTopology } from '../harness/redis-topology.js';

const groups: RedisSentinelTopology[] = [];
// After-hooks run in reverse order: the world (workers) closes first, then the group.
afterEach(async () => {
  await Promise.all(groups.splice(0).map((g) => g.close()));
});
const chaos = useChaos();
/** A worker's log line for a lost connection. */
const LOST = /"msg":"Redis connection lost/;

describe('chaos: a Sentinel-managed primary killed mid-run', () => {
  it(
    'Sentinel promotes the replica, the run completes with every row once, a second run writes nothing',
    { timeout: 120_000 },
    async () => {
      const group = await startRedisSentinel({ downAfterMs: 1_000, failoverTimeoutMs: 5_000 });
      groups.push(group);
      expect(await group.primaryAddress()).toBe(group.primary.address);
      const c = await chaos({
        sandbox: { latencyMs: 10, seed: 42 },
        redis: {
          env: { REDIS_SENTINELS: group.seeds, REDIS_SENTINEL_NAME: group.name },
          connect: () => group.connect(),
        },
        env: { PLATFORM_RATE_LIMIT: 400 },
      });
      await expectSyncThroughRedisFault(
        c,
        async () => {
          await group.primary.kill();
          await group.waitForPromotion(group.replica, 30_000);
        },
        LOST,
      );
      expect(group.primary.alive).toBe(false);
      expect(await group.primaryAddress()).toBe(group.replica.address);
    },
  );
});
