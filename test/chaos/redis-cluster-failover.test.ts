/**
 * Chaos: a Redis Cluster (3 primaries, 3 replicas) loses, by SIGKILL, the
 * primary that serves the hash slot of every crm-sync key (the prefix's
 * `{…}` tag) while two worker processes write a 2,000-row sync. The cluster's
 * own failure detection (`cluster-node-timeout` 1 s) promotes that primary's
 * replica; the workers follow the slot to it and finish the run, with every
 * valid row on the platform once and a second run that writes nothing.
 * First, the same failover under plain connections: commands kept in flight
 * on the slot all through it wait for the replica, and none fails.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createRedis, type RedisClient } from '../../src/redis/connection.js';
import { redisTargetOf } from '../../src/redis/target.js';
import { sleep } from '../../src/sleep.js';
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
    "a worker's and the state store's commands on the slot wait for the replica instead of failing",
    { timeout: 60_000 },
    async () => {
      const cluster = await startRedisCluster({ primaries: 3, nodeTimeoutMs: 1_000 });
      clusters.push(cluster);
      // The target a worker builds from REDIS_CLUSTER_NODES.
      const prefix = '{crm-sync-failover}';
      const { target, problems } = redisTargetOf({
        clusterNodes: cluster.seeds,
        defaultUrl: 'redis://127.0.0.1:6379',
        prefix,
      });
      expect(problems).toEqual([]);
      const clients = [createRedis('worker', target!), createRedis('state', target!)];
      const key = `${prefix}:n`;
      const owner = await cluster.slotOwner(key);
      const errors: string[] = [];
      let done = 0;
      let stop = false;
      // Commands in flight all through the failover: single ones, and
      // MULTI blocks (which a pipeline sends and redirects as one).
      const loops = clients.flatMap((redis: RedisClient) =>
        Array.from({ length: 5 }, async (_, i) => {
          while (!stop) {
            try {
              if (i % 2 === 0) await redis.incr(key);
              else {
                // EXEC answers each command's error in its place, or null when aborted.
                const replies = await redis.multi().incr(key).incr(key).exec();
                const failed = replies === null ? 'EXEC aborted' : replies.find(([e]) => e)?.[0];
                if (failed) throw failed instanceof Error ? failed : new Error(failed);
              }
              done++;
            } catch (err) {
              errors.push((err as Error).message);
            }
            await sleep(5);
          }
        }),
      );
      try {
        await sleep(300);
        await owner.primary.kill();
        await cluster.waitForPromotion(owner.replicas[0]!, owner.slot, 30_000);
        const atPromotion = done;
        await sleep(500);
        stop = true;
        await Promise.all(loops);
        expect(errors).toEqual([]);
        expect(done, 'commands done after the promotion').toBeGreaterThan(atPromotion);
      } finally {
        stop = true;
        for (const redis of clients) redis.disconnect();
      }
    },
  );

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
