/**
 * Redis topologies of our own for failover and placement tests: a Redis
 * Cluster (primaries with one replica each, or none) and a Sentinel group (a
 * primary, a replica and three sentinels), every process a real `redis-server` (a sentinel is
 * `redis-server <conf> --sentinel`, so no separate `redis-sentinel` binary is
 * needed) on ports the kernel hands out, in temporary directories removed by `close()`. Helpers
 * SIGKILL a node, find the primary that owns a key's slot, wait until a
 * replica has been promoted, and freeze a server (SIGSTOP / SIGCONT).
 *
 * Nothing here touches a Redis it did not start: admin commands go to the
 * ports of the processes spawned here, one short connection per command.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Cluster, Redis } from 'ioredis';
import { freePort, removeDir, TEST_SERVER_ARGS } from './redis-server.js';

const HOST = '127.0.0.1';

export interface RedisNode {
  port: number;
  /** `127.0.0.1:port`, as REDIS_CLUSTER_NODES and REDIS_SENTINELS list it. */
  address: string;
  dir: string;
  pid: number;
  /** False once the process has exited (killed or crashed). */
  readonly alive: boolean;
  /** SIGKILLs the process (no shutdown, no save) and waits until it has exited. */
  kill(): Promise<void>;
  /** SIGSTOP: the process keeps its sockets but answers nothing. */
  pause(): void;
  /** SIGCONT after `pause()`. */
  resume(): void;
  /** One admin command on a connection of its own (2 s timeout). */
  call(...args: (string | number)[]): Promise<unknown>;
  /** The process's last log lines, for error messages. */
  log(): string;
}

/** One command to 127.0.0.1:port on a short-lived connection that never retries. */
export async function callPort(port: number, ...args: (string | number)[]): Promise<unknown> {
  const redis = new Redis({
    host: HOST,
    port,
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 2_000,
    commandTimeout: 2_000,
  });
  redis.on('error', () => {});
  try {
    await redis.connect();
    const [command, ...rest] = args;
    return await redis.call(String(command), ...rest);
  } finally {
    redis.disconnect();
  }
}

/** Polls `check` every 100 ms until it returns true (errors count as false). */
export async function waitUntil(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      if (await check()) return;
      lastError = undefined;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      const why = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
      throw new Error(`${what}: not after ${timeoutMs} ms${why}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The `field:value` lines of INFO or CLUSTER INFO as a map. */
export function infoFields(text: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const at = line.indexOf(':');
    if (at > 0 && !line.startsWith('#')) fields.set(line.slice(0, at), line.slice(at + 1).trim());
  }
  return fields;
}

/**
 * Spawns `redis-server ...args` listening on `port` and waits until it answers PING.
 * `dir` is the node's own temporary directory, removed with `kill` by `close`;
 * `what` names the node in errors (`redis-server`, `sentinel`).
 */
async function spawnNode(
  what: string,
  args: string[],
  port: number,
  dir: string,
): Promise<RedisNode> {
  const proc: ChildProcess = spawn('redis-server', args, {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const keep = (b: Buffer): void => {
    lines.push(...b.toString().split('\n').filter(Boolean));
    if (lines.length > 60) lines.splice(0, lines.length - 60);
  };
  proc.stdout?.on('data', keep);
  proc.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  let alive = true;
  void exited.then(() => (alive = false));
  const spawnError = new Promise<never>((_, reject) => proc.once('error', reject));
  spawnError.catch(() => {});

  const node: RedisNode = {
    port,
    address: `${HOST}:${port}`,
    dir,
    pid: proc.pid ?? -1,
    get alive() {
      return alive;
    },
    async kill() {
      if (!alive) return;
      proc.kill('SIGKILL');
      await exited;
    },
    pause() {
      if (alive) proc.kill('SIGSTOP');
    },
    resume() {
      if (alive) proc.kill('SIGCONT');
    },
    call: (...a) => callPort(port, ...a),
    log: () => lines.join('\n'),
  };
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (!alive) throw new Error(`${what} on port ${port} exited:\n${node.log()}`);
    const pong = await Promise.race([node.call('PING').catch(() => undefined), spawnError]);
    if (pong === 'PONG') return node;
    if (Date.now() > deadline) {
      await node.kill();
      throw new Error(`${what} on port ${port} did not answer within 10 s:\n${node.log()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Settings every data node shares: loopback only, no persistence, BullMQ's eviction rule. */
function dataNodeArgs(port: number, dir: string): string[] {
  return [
    '--port',
    String(port),
    '--bind',
    HOST,
    '--dir',
    dir,
    '--appendonly',
    'no',
    ...TEST_SERVER_ARGS,
  ];
}

async function startDataNode(extra: string[]): Promise<RedisNode> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'crm-sync-topology-'));
  try {
    return await spawnNode('redis-server', [...dataNodeArgs(port, dir), ...extra], port, dir);
  } catch (err) {
    removeDir(dir);
    throw err;
  }
}

/** Kills every node (SIGKILL works on a paused one too) and removes their directories. */
async function removeNodes(nodes: readonly RedisNode[]): Promise<void> {
  await Promise.all(nodes.map((n) => n.kill()));
  for (const n of nodes) removeDir(n.dir);
}

/** Whether a replica has finished its initial sync with its primary. */
async function replicaLinked(node: RedisNode): Promise<boolean> {
  const info = infoFields(String(await node.call('INFO', 'replication')));
  return (
    info.get('role') === 'slave' &&
    info.get('master_link_status') === 'up' &&
    info.get('master_sync_in_progress') === '0'
  );
}

async function isPrimary(node: RedisNode): Promise<boolean> {
  const role = (await node.call('ROLE')) as unknown[];
  return role[0] === 'master';
}

// ---------------------------------------------------------------- Cluster

export interface ClusterNodeLine {
  id: string;
  port: number;
  flags: string[];
  primaryId: string | undefined;
  slots: [number, number][];
}

/** `CLUSTER NODES` parsed: one entry per node, with the slot ranges a primary serves. */
export function parseClusterNodes(text: string): ClusterNodeLine[] {
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((line) => {
      const [id, addr, flags, primary, , , , , ...slots] = line.trim().split(' ');
      const port = Number(addr!.split('@')[0]!.split(':').pop());
      return {
        id: id!,
        port,
        flags: flags!.split(','),
        primaryId: primary === '-' ? undefined : primary,
        // Slot ranges (`0-5460`, `42`); migrating entries (`[…]`) are left out.
        slots: slots
          .filter((s) => !s.startsWith('['))
          .map((s) => {
            const [from, to] = s.split('-').map(Number);
            return [from!, to ?? from!] as [number, number];
          }),
      };
    });
}

export interface SlotOwner {
  slot: number;
  primary: RedisNode;
  /** Its replicas, as the cluster lists them. */
  replicas: RedisNode[];
}

export interface RedisClusterTopology {
  nodes: RedisNode[];
  /** `host:port,…` of every node, for REDIS_CLUSTER_NODES. */
  seeds: string;
  /** The primary serving `key`'s hash slot (asked of a live node) and its replicas. */
  slotOwner(key: string): Promise<SlotOwner>;
  /**
   * Waits until `replica` is a primary serving `slot` and every live node
   * says `cluster_state:ok` (the cluster's own failure detection, or
   * `takeover()`, does the promotion).
   */
  waitForPromotion(replica: RedisNode, slot: number, timeoutMs?: number): Promise<void>;
  /** `CLUSTER FAILOVER TAKEOVER` on a replica: promotion without the primaries' vote. */
  takeover(replica: RedisNode): Promise<void>;
  /** A cluster client of the test's own, retrying through a failover (errors are the caller's to tolerate). */
  connect(): Cluster;
  close(): Promise<void>;
}

export interface ClusterOptions {
  primaries?: number;
  /** Replicas of each primary: 1 (the default, for failover tests) or 0 (a cluster that forms faster). */
  replicas?: 0 | 1;
  /** `cluster-node-timeout`: how long a silent node takes to be marked failed (default 1,000 ms). */
  nodeTimeoutMs?: number;
}

/**
 * A Redis Cluster of `primaries` primaries with one replica each (none with
 * `replicas: 0`), created by `redis-cli --cluster create` and returned once
 * every node says `cluster_state:ok` and every replica has synced. The bus port is chosen
 * by the kernel too (`cluster-port`), not port + 10000.
 */
export async function startRedisCluster(opts: ClusterOptions = {}): Promise<RedisClusterTopology> {
  const replicas = opts.replicas ?? 1;
  const count = (opts.primaries ?? 3) * (1 + replicas);
  const nodeTimeout = String(opts.nodeTimeoutMs ?? 1_000);
  const nodes: RedisNode[] = [];
  try {
    for (let i = 0; i < count; i++) {
      nodes.push(
        await startDataNode([
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          'nodes.conf',
          '--cluster-port',
          String(await freePort()),
          '--cluster-node-timeout',
          nodeTimeout,
          // A replica may always stand in for its primary, however long since it last heard of it.
          '--cluster-replica-validity-factor',
          '0',
        ]),
      );
    }
    await promisify(execFile)(
      'redis-cli',
      [
        '--cluster',
        'create',
        ...nodes.map((n) => n.address),
        '--cluster-replicas',
        String(replicas),
        '--cluster-yes',
      ],
      { timeout: 30_000 },
    );
    await waitUntil('cluster formed', async () => {
      for (const n of nodes) {
        const info = infoFields(String(await n.call('CLUSTER', 'INFO')));
        if (info.get('cluster_state') !== 'ok') return false;
        if (info.get('cluster_known_nodes') !== String(count)) return false;
        if (!(await isPrimary(n)) && !(await replicaLinked(n))) return false;
      }
      return true;
    });
  } catch (err) {
    await removeNodes(nodes);
    throw err;
  }

  const live = (): RedisNode => {
    const n = nodes.find((x) => x.alive);
    if (!n) throw new Error('no cluster node is alive');
    return n;
  };
  const byPort = (port: number): RedisNode => {
    const n = nodes.find((x) => x.port === port);
    if (!n) throw new Error(`no node of ours on port ${port}`);
    return n;
  };
  const lines = async (): Promise<ClusterNodeLine[]> =>
    parseClusterNodes(String(await live().call('CLUSTER', 'NODES')));

  return {
    nodes,
    seeds: nodes.map((n) => n.address).join(','),
    async slotOwner(key) {
      const slot = Number(await live().call('CLUSTER', 'KEYSLOT', key));
      const all = await lines();
      const owner = all.find(
        (l) => l.flags.includes('master') && l.slots.some(([a, b]) => a <= slot && slot <= b),
      );
      if (!owner) throw new Error(`no primary serves slot ${slot}`);
      return {
        slot,
        primary: byPort(owner.port),
        replicas: all.filter((l) => l.primaryId === owner.id).map((l) => byPort(l.port)),
      };
    },
    async waitForPromotion(replica, slot, timeoutMs = 20_000) {
      await waitUntil(
        `replica ${replica.address} promoted for slot ${slot}`,
        async () => {
          const own = parseClusterNodes(String(await replica.call('CLUSTER', 'NODES'))).find((l) =>
            l.flags.includes('myself'),
          );
          if (!own?.flags.includes('master')) return false;
          if (!own.slots.some(([a, b]) => a <= slot && slot <= b)) return false;
          for (const n of nodes.filter((x) => x.alive)) {
            const info = infoFields(String(await n.call('CLUSTER', 'INFO')));
            if (info.get('cluster_state') !== 'ok') return false;
          }
          return true;
        },
        timeoutMs,
      );
    },
    async takeover(replica) {
      await replica.call('CLUSTER', 'FAILOVER', 'TAKEOVER');
    },
    connect() {
      const cluster = new Cluster(
        nodes.map((n) => ({ host: HOST, port: n.port })),
        { clusterRetryStrategy: () => 200, redisOptions: { maxRetriesPerRequest: 3 } },
      );
      cluster.on('error', () => {});
      cluster.on('node error', () => {});
      return cluster;
    },
    close: () => removeNodes(nodes),
  };
}

// ---------------------------------------------------------------- Sentinel

export interface RedisSentinelTopology {
  /** The primary and the replica as started (roles change on failover). */
  primary: RedisNode;
  replica: RedisNode;
  sentinels: RedisNode[];
  /** The monitored primary's name (REDIS_SENTINEL_NAME). */
  name: string;
  /** `host:port,…` of the sentinels, for REDIS_SENTINELS. */
  seeds: string;
  /** `host:port` of the primary as the first live sentinel reports it. */
  primaryAddress(): Promise<string>;
  /** Waits until every live sentinel names `node` as the primary and `node` says it is one. */
  waitForPromotion(node: RedisNode, timeoutMs?: number): Promise<void>;
  /** A Sentinel client of the test's own, following the primary through a failover. */
  connect(): Redis;
  close(): Promise<void>;
}

export interface SentinelOptions {
  name?: string;
  sentinels?: number;
  /** `down-after-milliseconds` (default 1,000). */
  downAfterMs?: number;
  /** `failover-timeout` (default 5,000). */
  failoverTimeoutMs?: number;
}

/**
 * A Sentinel group: a primary, one replica of it, and `sentinels` (3)
 * sentinels (`redis-server <conf> --sentinel`) monitoring it with a quorum of a majority.
 * Returned once the replica has synced and every sentinel knows the replica
 * and the other sentinels (`SENTINEL CKQUORUM` says OK).
 */
export async function startRedisSentinel(
  opts: SentinelOptions = {},
): Promise<RedisSentinelTopology> {
  const name = opts.name ?? 'crm-sync-primary';
  const count = opts.sentinels ?? 3;
  const quorum = Math.floor(count / 2) + 1;
  const all: RedisNode[] = [];
  try {
    const primary = await startDataNode([]);
    all.push(primary);
    const replica = await startDataNode(['--replicaof', HOST, String(primary.port)]);
    all.push(replica);
    await waitUntil('replica synced', () => replicaLinked(replica));

    const sentinels: RedisNode[] = [];
    for (let i = 0; i < count; i++) {
      const port = await freePort();
      const dir = mkdtempSync(join(tmpdir(), 'crm-sync-sentinel-'));
      // Sentinel rewrites its configuration file as it learns: it must be a writable file of its own.
      const conf = join(dir, 'sentinel.conf');
      writeFileSync(
        conf,
        [
          `port ${port}`,
          `bind ${HOST}`,
          `dir ${dir}`,
          'protected-mode no',
          `sentinel monitor ${name} ${HOST} ${primary.port} ${quorum}`,
          `sentinel down-after-milliseconds ${name} ${opts.downAfterMs ?? 1_000}`,
          `sentinel failover-timeout ${name} ${opts.failoverTimeoutMs ?? 5_000}`,
          `sentinel parallel-syncs ${name} 1`,
          '',
        ].join('\n'),
      );
      try {
        const s = await spawnNode('sentinel', [conf, '--sentinel'], port, dir);
        sentinels.push(s);
        all.push(s);
      } catch (err) {
        removeDir(dir);
        throw err;
      }
    }
    await waitUntil(
      'sentinels agree',
      async () => {
        for (const s of sentinels) {
          if ((await s.call('SENTINEL', 'CKQUORUM', name).catch(() => '')) === '') return false;
          const replicas = (await s.call('SENTINEL', 'REPLICAS', name)) as unknown[];
          const others = (await s.call('SENTINEL', 'SENTINELS', name)) as unknown[];
          if (replicas.length !== 1 || others.length !== count - 1) return false;
        }
        return true;
      },
      30_000,
    );

    const addressOf = async (s: RedisNode): Promise<string> => {
      const [host, port] = (await s.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name)) as string[];
      return `${host}:${port}`;
    };
    return {
      primary,
      replica,
      sentinels,
      name,
      seeds: sentinels.map((s) => s.address).join(','),
      async primaryAddress() {
        const s = sentinels.find((x) => x.alive);
        if (!s) throw new Error('no sentinel is alive');
        return addressOf(s);
      },
      async waitForPromotion(node, timeoutMs = 20_000) {
        await waitUntil(
          `${node.address} promoted by Sentinel`,
          async () => {
            for (const s of sentinels.filter((x) => x.alive)) {
              if ((await addressOf(s)) !== node.address) return false;
            }
            return isPrimary(node);
          },
          timeoutMs,
        );
      },
      connect() {
        const redis = new Redis({
          sentinels: sentinels.map((x) => ({ host: HOST, port: x.port })),
          name,
          maxRetriesPerRequest: null,
          retryStrategy: () => 200,
          sentinelRetryStrategy: () => 200,
        });
        redis.on('error', () => {});
        return redis;
      },
      close: () => removeNodes(all),
    };
  } catch (err) {
    await removeNodes(all);
    throw err;
  }
}

// ---------------------------------------------------------------- any server

/** The process id of the server behind a connection (INFO server), to signal it. */
export async function serverPid(redis: {
  info(section: 'server'): Promise<string>;
}): Promise<number> {
  const pid = Number(infoFields(await redis.info('server')).get('process_id'));
  if (!Number.isInteger(pid) || pid <= 0) throw new Error('INFO server gave no process_id');
  return pid;
}

/**
 * Freezes the process `pid` (SIGSTOP) for `ms`, running `during` meanwhile,
 * and lets it go on (SIGCONT) whatever `during` does.
 */
export async function freezeFor<T>(pid: number, ms: number, during: () => Promise<T>): Promise<T> {
  const until = Date.now() + ms;
  process.kill(pid, 'SIGSTOP');
  try {
    const result = await during();
    const left = until - Date.now();
    if (left > 0) await new Promise((r) => setTimeout(r, left));
    return result;
  } finally {
    process.kill(pid, 'SIGCONT');
  }
}
