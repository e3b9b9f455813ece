/**
 * Chaos: a Redis Cluster (3 primaries, 3 replicas) loses, by SIGKILL, the
 * primary that serves the hash slot of every crm-sync key (the prefix's
 * `{…}` tag) while two worker processes write a 2,000-row sync. The cluster's
 * own failure detection (`cluster-node-timeout` 1 s) promotes that primary's
 * replica; the workers follow the slot to it and finish the run, with every
 * valid row on the platform once and a second run that writes nothing.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { expectSyncThroughRedisFault, useChaos } from '../harness/chaos.js';
import { startRedisCluster, type RedisClusterTopology } from '../harness/redis-topology.js';

const clusters: RedisClusterTopology[] = [];
// After-hooks run in reverse order: the world (workers) closes first, then the cluster.
afterEach(async () => {
  await Promise.all(clusters.splice(0).map((c) => c.close()));
});
const chaos = useChaos();
/** A worker's log line for a lost connection (the whole client, or one cluster node). */
const LOST = /"msg":"Redis (connection lost|cluster node unreachable)/;

describe('chaos: the primary of our slot in a Redis Cluster killed mid-run', () => {
  it(
    'its replica takes over, the run completes with every row once, a second run writes nothing',
    { timeout: 120_000 },
    async () => {
      const cluster = await startRedisCluster({ primaries: 3, nodeTimeoutMs: 1_000 });
      clusters.push(cluster);
      const c = await chaos({
        sandbox: { latencyMs: 10, seed: 41 },
        redis: { env: { REDIS_CLUSTER_NODES: cluster.seeds }, connect: () => cluster.connect() },
        env: { PLATFORM_RATE_LIMIT: 400 },
      });
      const owner = await cluster.slotOwner(c.prefix);
      expect(owner.replicas).toHaveLength(1);
      const [replica] = owner.replicas;
      await expectSyncThroughRedisFault(
        c,
        async () => {
          await owner.primary.kill();
          await cluster.waitForPromotion(replica!, owner.slot, 30_000);
        },
        LOST,
      );
      expect(owner.primary.alive).toBe(false);
      // The replica serves the slot now, and the cluster knows it.
      const now = await cluster.slotOwner(c.prefix);
      expect(now.primary.port).toBe(replica!.port);
    },
  );
});
