/**
 * Several deployments on one Redis Cluster (docs/SCALING.md): three crm-sync
 * deployments, each with its own key prefix and so its own hash tag, sync at
 * the same time against one 3-primary cluster, each with its own platform.
 * The prefixes are chosen here by asking the cluster which primary serves
 * each candidate's slot, until three land on three different primaries.
 * Every node is then asked for its keys: each prefix's keys are all in its
 * one slot on its primary, the three prefixes on three primaries, and each
 * platform holds exactly its own deployment's records.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import {
  companyRows,
  countWrites,
  expectedCompany,
  hubspotCells,
  hubspotJob,
  HUBSPOT_HEADER,
  statsSince,
  useEngines,
  type EngineHarness,
} from '../harness/engine.js';
import {
  parseClusterNodes,
  startRedisCluster,
  type RedisClusterTopology,
  type RedisNode,
} from '../harness/redis-topology.js';

const engine = useEngines();
const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

interface Tenant {
  prefix: string;
  slot: number;
  primary: RedisNode;
}

/**
 * One prefix per primary: candidates `{crm-sync-<name>-<n>}` are tried in turn
 * (CLUSTER KEYSLOT and the slot ranges of CLUSTER NODES, asked of the cluster)
 * and each name keeps the first candidate on a primary no other name has.
 */
async function prefixesOnDistinctPrimaries(
  cluster: RedisClusterTopology,
  names: readonly string[],
): Promise<Tenant[]> {
  const run = randomBytes(3).toString('hex');
  const chosen: Tenant[] = [];
  for (const name of names) {
    for (let n = 0; ; n++) {
      if (n > 200) throw new Error(`no prefix for ${name} on a primary of its own`);
      const prefix = `{crm-sync-${name}-${run}-${n}}`;
      const owner = await cluster.slotOwner(prefix);
      if (chosen.some((t) => t.primary.port === owner.primary.port)) continue;
      chosen.push({ prefix, slot: owner.slot, primary: owner.primary });
      break;
    }
  }
  return chosen;
}

/** Every key a node holds (our own cluster: KEYS is fine at this size). */
async function keysOn(node: RedisNode): Promise<string[]> {
  return ((await node.call('KEYS', '*')) as string[]).sort();
}

describe('three deployments on one 3-primary Redis Cluster', () => {
  it('each prefix in its own slot on its own primary, all three syncing at once', async () => {
    const cluster = await startRedisCluster({ primaries: 3, replicas: 0 });
    cleanups.push(() => cluster.close());
    const primaries = parseClusterNodes(String(await cluster.nodes[0]!.call('CLUSTER', 'NODES')))
      .filter((l) => l.flags.includes('master'))
      .map((l) => cluster.nodes.find((n) => n.port === l.port)!);
    expect(primaries).toHaveLength(3);

    const tenants = await prefixesOnDistinctPrimaries(cluster, ['acme', 'globex', 'initech']);
    expect(new Set(tenants.map((t) => t.primary.port)).size).toBe(3);

    // Each deployment its own platform, export and size, all on the one cluster.
    const sizes = [20, 25, 30];
    const deployments: { h: EngineHarness; rows: ReturnType<typeof companyRows> }[] = [];
    for (const [i, t] of tenants.entries()) {
      const h = await engine({ prefix: t.prefix, env: { REDIS_CLUSTER_NODES: cluster.seeds } });
      expect(h.config.redis.kind).toBe('cluster');
      expect(h.config.prefix).toBe(t.prefix);
      const rows = companyRows(sizes[i]!, 7_000_001 + i * 1_000);
      const path = h.writeCsv('companies.csv', HUBSPOT_HEADER, rows.map(hubspotCells));
      h.writeJob('companies', hubspotJob(path));
      deployments.push({ h, rows });
    }

    const firsts = await Promise.all(deployments.map(({ h }) => h.runJob('companies')));
    for (const [i, run] of firsts.entries()) {
      expect(run.error).toBeUndefined();
      expect(run.status).toBe('completed');
      expect(run.counts).toMatchObject({ read: sizes[i], created: sizes[i], failed: 0 });
    }

    // Each platform holds its own deployment's companies, each once, and nothing else.
    for (const { h, rows } of deployments) {
      const held = (await h.dump()).companies;
      const byId = new Map(held.map((c) => [String(c.external_id), c]));
      expect(held).toHaveLength(rows.length);
      for (const r of rows)
        expect(byId.get(`hubspot:company:${r.id}`)).toMatchObject(expectedCompany(r));
    }

    // Synced again at once: each reads its state back from its shard and writes nothing.
    const before = await Promise.all(deployments.map(({ h }) => h.stats()));
    const seconds = await Promise.all(deployments.map(({ h }) => h.runJob('companies')));
    for (const [i, run] of seconds.entries()) {
      expect(run.status).toBe('completed');
      expect(run.counts).toMatchObject({
        read: sizes[i],
        created: 0,
        updated: 0,
        unchanged: sizes[i],
      });
      const { h } = deployments[i]!;
      expect(countWrites(statsSince(before[i]!, await h.stats()))).toBe(0);
    }

    // Where the keys are, asked of each primary: a prefix's keys all on its slot's owner and in
    // that one slot (CLUSTER KEYSLOT of each), none on the other primaries. Idle workers still
    // make and expire keys, so the slot is asked of each key listed, not counted later.
    const held = new Map<number, string[]>();
    for (const p of primaries) held.set(p.port, await keysOn(p));
    for (const t of tenants) {
      const mine = held.get(t.primary.port)!.filter((k) => k.startsWith(t.prefix));
      // Sync state and the queues both: the layout record, record buckets, the write queue.
      expect(mine).toContain(`${t.prefix}:meta`);
      expect(mine.some((k) => k.startsWith(`${t.prefix}:companies:rec:`))).toBe(true);
      expect(mine.some((k) => k.startsWith(`${t.prefix}:platform-writes:`))).toBe(true);
      const slots = await Promise.all(mine.map((k) => t.primary.call('CLUSTER', 'KEYSLOT', k)));
      expect(new Set(slots.map(Number))).toEqual(new Set([t.slot]));
      for (const p of primaries) {
        if (p.port === t.primary.port) continue;
        expect(held.get(p.port)!.filter((k) => k.startsWith(t.prefix))).toEqual([]);
      }
    }
    // And nothing on any primary but the three deployments' keys.
    for (const keys of held.values())
      expect(keys.filter((k) => !tenants.some((t) => k.startsWith(t.prefix)))).toEqual([]);
  });
});
