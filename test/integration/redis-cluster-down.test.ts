/**
 * A Redis Cluster that is down for a while (`cluster_state:fail`: a slot no
 * node serves) and comes back. A BullMQ worker idle on it gives up its
 * blocking wait after the wait's own deadline and reconnects its blocking
 * connection; that reconnection must end when the cluster is back, or the
 * worker never fetches a job again. A producer (a CLI command) meeting the
 * cluster down is refused at once, as when Redis is unreachable, not left hanging,
 * and the ops server's readiness names the cluster's state.
 */
import { Queue, Worker } from 'bullmq';
import { createMetrics } from '../../src/ops/metrics.js';
import { startOpsServer } from '../../src/ops/server.js';
import { afterEach, describe, expect, it } from 'vitest';
import {
  closeRedis,
  connectProducer,
  createRedis,
  RedisUnavailableError,
  type RedisClient,
} from '../../src/redis/connection.js';
import { redisTargetOf, type RedisTarget } from '../../src/redis/target.js';
import { sleep } from '../../src/sleep.js';
import {
  infoFields,
  startRedisCluster,
  waitUntil,
  type RedisClusterTopology,
  type RedisNode,
} from '../harness/redis-topology.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

const PREFIX = '{crm-sync-down}';

/** A 3-primary cluster without replicas (it forms fastest), closed after the test. */
async function newCluster(): Promise<RedisClusterTopology> {
  const cluster = await startRedisCluster({ primaries: 3, replicas: 0 });
  cleanups.push(() => cluster.close());
  return cluster;
}

/** The cluster as a worker's configuration describes it. */
function targetOf(cluster: RedisClusterTopology): RedisTarget {
  const { target, problems } = redisTargetOf({
    clusterNodes: cluster.seeds,
    defaultUrl: 'redis://127.0.0.1:6379',
    prefix: PREFIX,
  });
  expect(problems).toEqual([]);
  return target!;
}

async function clusterStates(nodes: readonly RedisNode[]): Promise<string[]> {
  return Promise.all(
    nodes.map(
      async (n) => infoFields(String(await n.call('CLUSTER', 'INFO'))).get('cluster_state') ?? '',
    ),
  );
}

/**
 * Takes the slot of `key` (not ours) out of every node's map: each node says
 * `cluster_state:fail` and refuses every command, while it still answers
 * CLUSTER SLOTS. Returns the step that gives the slot back to its primary.
 *
 * The owner gives the slot up first: a node that has dropped a slot takes it
 * back from the next heartbeat of a node still claiming it. Then every node
 * still up is asked, until none is (a heartbeat sent before the owner's
 * DELSLOTS may still reach one after its own).
 */
async function takeClusterDown(cluster: RedisClusterTopology, key: string) {
  const { slot, primary } = await cluster.slotOwner(key);
  await primary.call('CLUSTER', 'DELSLOTS', slot);
  await waitUntil('cluster down', async () => {
    const states = await clusterStates(cluster.nodes);
    const up = cluster.nodes.filter((_, i) => states[i] !== 'fail');
    // A node that dropped the slot meanwhile refuses a second DELSLOTS: nothing to do.
    await Promise.all(up.map((n) => n.call('CLUSTER', 'DELSLOTS', slot).catch(() => undefined)));
    return up.length === 0;
  });
  return async () => {
    await primary.call('CLUSTER', 'ADDSLOTS', slot);
    await waitUntil('cluster back', async () =>
      (await clusterStates(cluster.nodes)).every((s) => s === 'ok'),
    );
  };
}

/** A key on a hash slot other than the prefix's, as the cluster computes slots. */
async function keyOffOurSlot(cluster: RedisClusterTopology): Promise<string> {
  const node = cluster.nodes[0]!;
  const ours = Number(await node.call('CLUSTER', 'KEYSLOT', PREFIX));
  for (let i = 0; ; i++) {
    const key = `down-${i}`;
    if (Number(await node.call('CLUSTER', 'KEYSLOT', key)) !== ours) return key;
  }
}

describe('a Redis Cluster down for a while', () => {
  it(
    'an idle worker that reconnected while it was down takes the next job once it is back',
    { timeout: 60_000 },
    async () => {
      const cluster = await newCluster();
      const connection = createRedis('worker', targetOf(cluster));
      const producer = createRedis('state', targetOf(cluster));
      cleanups.push(async () => {
        await closeRedis(connection);
        await closeRedis(producer);
      });
      const taken: string[] = [];
      const worker = new Worker(
        'down',
        async (job) => {
          taken.push(job.name);
        },
        { connection, prefix: PREFIX },
      );
      worker.on('error', () => undefined);
      cleanups.push(() => worker.close(true));
      const queue = new Queue('down', { connection: producer, prefix: PREFIX });
      cleanups.push(() => queue.close());
      await worker.waitUntilReady();
      await queue.add('before', {});
      await waitUntil('first job taken', async () => taken.length === 1);

      const bringBack = await takeClusterDown(cluster, await keyOffOurSlot(cluster));
      // Longer than the worker's blocking wait (drainDelay 5 s) and its
      // watchdog's second: the worker has given up the wait and reconnected
      // its blocking connection while the cluster refused it.
      await sleep(7_500);
      await bringBack();

      await queue.add('after', {});
      await waitUntil('the job after the outage taken', async () => taken.length === 2, 20_000);
      expect(taken).toEqual(['before', 'after']);
    },
  );

  it(
    "readiness names the cluster's state while it is down, and is ready once it is back",
    { timeout: 60_000 },
    async () => {
      const cluster = await newCluster();
      const redis = createRedis('worker', targetOf(cluster));
      cleanups.push(() => closeRedis(redis));
      const ops = await startOpsServer({
        port: 0,
        redis,
        queues: [],
        metrics: createMetrics({ defaultMetrics: false }),
        checkPlatform: async () => undefined,
      });
      cleanups.push(() => ops.close());
      const readiness = async () => {
        const res = await fetch(`${ops.url}/readyz`, { signal: AbortSignal.timeout(10_000) });
        return { status: res.status, body: (await res.json()) as unknown };
      };
      expect(await readiness()).toEqual({ status: 200, body: { status: 'ready' } });
      const bringBack = await takeClusterDown(cluster, await keyOffOurSlot(cluster));
      expect(await readiness()).toEqual({
        status: 503,
        body: { status: 'unready', problems: ['redis: cluster_state is not ok'] },
      });
      await bringBack();
      expect(await readiness()).toEqual({ status: 200, body: { status: 'ready' } });
    },
  );

  it(
    'a producer meeting it down is refused at once as Redis unreachable, naming the state',
    { timeout: 60_000 },
    async () => {
      const cluster = await newCluster();
      await takeClusterDown(cluster, await keyOffOurSlot(cluster));
      const target = targetOf(cluster);
      const started = Date.now();
      const outcome = await Promise.race([
        connectProducer(target).then(
          async (redis: RedisClient) => {
            cleanups.push(() => closeRedis(redis));
            return 'connected';
          },
          (err: unknown) => err,
        ),
        sleep(15_000).then(() => 'hung'),
      ]);
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(outcome).toBeInstanceOf(RedisUnavailableError);
      expect((outcome as Error).message).toBe(
        `Redis at ${target.display} is not reachable (cluster_state is not ok)`,
      );
    },
  );
});
