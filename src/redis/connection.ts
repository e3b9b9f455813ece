/**
 * Redis connections, one factory per role, for every topology the
 * configuration describes (redis-target.ts: one node, Redis Cluster or a
 * Sentinel-managed primary, with TLS and ACL credentials). BullMQ's
 * production guide asks for two kinds: workers (and anything long-running)
 * wait for Redis forever, so a Redis restart or failover pauses work instead
 * of dropping it; producers driven by a user (the CLI) fail fast with one
 * clear line. What each role needs is set here once, for all three
 * topologies. The passwords are registered as secrets before any connection
 * is made, and addresses are printed without them.
 */
import type { ConnectionOptions as TlsOptions } from 'node:tls';
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { ConfigError } from '../config-error.js';
import { registerSecret, silentLogger, type Logger } from '../log.js';
import { redisSecretsOf, targetFromUrl, type RedisTarget, type RedisTls } from './target.js';

export { safeRedisUrl, type RedisTarget } from './target.js';

/** A connection to one node, a Sentinel-managed primary, or a whole cluster. */
export type RedisClient = Redis | Cluster;

/**
 * - `worker`: BullMQ workers and the scheduler. `maxRetriesPerRequest: null`
 *   (BullMQ requires it for blocking commands), commands queue while offline.
 * - `state`: the sync state store in long-running processes; waits like a
 *   worker, but on a connection of its own so blocking commands never delay it.
 * - `producer`: short-lived callers (CLI commands). No offline queue, one
 *   retry per command: an unreachable Redis is an error, not a hang.
 */
export type RedisRole = 'worker' | 'state' | 'producer';

/** Reconnect delays: 100 ms doubling, capped. Returning a number keeps ioredis retrying forever. */
export const RECONNECT_CAP_MS = 5_000;

export function reconnectDelay(attempt: number): number {
  return Math.min(100 * 2 ** Math.max(0, attempt - 1), RECONNECT_CAP_MS);
}

export class RedisUnavailableError extends Error {
  readonly code = 'redis.unavailable';
  readonly retryable = true;
  constructor(
    readonly url: string,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super(`Redis at ${url} is not reachable (${reason})`, options);
    this.name = 'RedisUnavailableError';
  }
}

/** The target a caller gave: a config's, or one node's URL (library callers, tests). */
export function targetOf(target: string | RedisTarget): RedisTarget {
  return typeof target === 'string' ? targetFromUrl(target) : target;
}

/** Registers a target's passwords (and a URL's, raw and decoded) as secrets. */
export function registerRedisSecrets(target: string | RedisTarget): void {
  const secrets =
    typeof target === 'string' ? redisSecretsOf(undefined, target) : redisSecretsOf(target);
  for (const secret of secrets) registerSecret(secret);
}

/** What every connection of a role needs, whatever the topology. */
export function redisOptionsFor(role: RedisRole): RedisOptions {
  const common: RedisOptions = {
    connectionName: `crm-sync:${role}`,
    retryStrategy: reconnectDelay,
    // A failover or READONLY reply means the node changed role: reconnect.
    reconnectOnError: (err) => err.message.startsWith('READONLY'),
  };
  if (role === 'producer') {
    return {
      ...common,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectTimeout: 5_000,
      lazyConnect: true,
    };
  }
  return { ...common, maxRetriesPerRequest: null, enableOfflineQueue: true };
}

/**
 * How a cluster command of a role that waits for Redis however long it
 * takes (`maxRetriesPerRequest: null`) follows redirections. While a primary
 * fails over, the other nodes send our slot's commands to the dead primary
 * (MOVED) and it does not answer (connection closed) until its replica
 * takes over, about twice `cluster-node-timeout` (15 s by default). ioredis
 * gives a command 16 redirections at 0-100 ms each, about a second, then
 * fails it; such a command follows them for as long as the failover takes,
 * each MOVED 100 ms later (ioredis: at once) so that a cluster still
 * disagreeing about the slot is not asked in a tight loop. A producer keeps
 * ioredis's bound: it fails fast.
 */
const WAIT_OUT_FAILOVER: Partial<ClusterOptions> = {
  maxRedirections: Infinity,
  retryDelayOnMoved: 100,
};

function tlsOf(tls: RedisTls | undefined): TlsOptions | undefined {
  if (!tls) return undefined;
  return {
    ...(tls.ca !== undefined && { ca: [tls.ca] }),
    ...(tls.servername !== undefined && { servername: tls.servername }),
  };
}

/**
 * The ioredis client for a target and role (not connected yet for a
 * producer). `failFast` makes the first connection attempt the only one
 * (`connectProducer` turns retries back on once connected).
 */
export function clientFor(role: RedisRole, target: RedisTarget, failFast = false): RedisClient {
  const { retryStrategy, enableOfflineQueue, lazyConnect, ...perNode } = redisOptionsFor(role);
  const retry = failFast ? () => null : retryStrategy;
  const tls = tlsOf(target.tls);
  const auth = {
    ...(target.username !== undefined && { username: target.username }),
    ...(target.password !== undefined && { password: target.password }),
  };
  if (target.kind === 'cluster') {
    const options: ClusterOptions = {
      // Reconnecting to the cluster as a whole (all nodes lost); nodes that
      // move are found again by MOVED replies and slot refreshes.
      clusterRetryStrategy: retry ?? null,
      ...(enableOfflineQueue !== undefined && { enableOfflineQueue }),
      ...(lazyConnect !== undefined && { lazyConnect }),
      slotsRefreshTimeout: 2_000,
      // ioredis's ready check (CLUSTER INFO until cluster_state:ok) leaves the
      // promise of `connect()` pending forever when it fails: it reconnects
      // under a new promise instead. A cluster down while a BullMQ worker
      // reconnects its blocking connection would park that worker's fetch
      // loop for good, and a CLI command would hang. Without it, `connect()`
      // ends once the slots are known, a command the cluster refuses
      // (CLUSTERDOWN) is retried as a redirection (a waiting role's until the
      // cluster is back), and `connectProducer` asks for cluster_state:ok itself.
      enableReadyCheck: false,
      ...(perNode.maxRetriesPerRequest === null && WAIT_OUT_FAILOVER),
      redisOptions: { ...perNode, ...auth, ...(tls && { tls }) },
      // Keep the nodes' host names: TLS certificates name hosts, not addresses.
      ...(tls && { dnsLookup: (address, callback) => callback(null, address) }),
    };
    return new Cluster(target.nodes, options);
  }
  const common: RedisOptions = {
    ...perNode,
    ...auth,
    ...(retry !== undefined && { retryStrategy: retry }),
    ...(enableOfflineQueue !== undefined && { enableOfflineQueue }),
    ...(lazyConnect !== undefined && { lazyConnect }),
    db: target.db,
    ...(tls && { tls }),
  };
  if (target.kind === 'single') return new Redis({ ...common, ...target.node });
  return new Redis({
    ...common,
    sentinels: target.sentinels,
    name: target.name,
    // The sentinels get their password only (as their `default` user: no sentinel
    // ACL user) and, below, the data nodes' TLS settings (OPERATIONS says so).
    ...(target.sentinelPassword !== undefined && { sentinelPassword: target.sentinelPassword }),
    // Ask the sentinels again after each round through all of them, like a node reconnect.
    sentinelRetryStrategy: failFast ? () => null : reconnectDelay,
    // No +switch-master listener (ioredis's failoverDetector): when it fires while
    // a reconnect is asking the sentinels, ioredis ends the connection for good
    // (the Sentinel failover chaos test caught workers stalled that way). A
    // failover needs no listener: Sentinel kills the clients of the nodes it
    // reconfigures, a dead primary drops them, and READONLY reconnects.
    failoverDetector: false,
    ...(tls && { enableTLSForSentinelMode: true, sentinelTLS: tls }),
  });
}

/** How often one cluster node's errors are logged while it stays unreachable. */
const NODE_ERROR_EVERY_MS = 60_000;

export interface ConnectOptions {
  logger?: Logger;
}

/**
 * A Redis connection for a role, with its error listeners attached (an
 * ioredis client without one crashes the process on the first fault). The
 * connection is not awaited; use `connectProducer` where failing fast matters.
 */
export function createRedis(
  role: RedisRole,
  target: string | RedisTarget,
  opts: ConnectOptions = {},
): RedisClient {
  registerRedisSecrets(target);
  const t = targetOf(target);
  const logger = opts.logger ?? silentLogger;
  const redis = clientFor(role, t);
  let down = false;
  const onError = (err: NodeJS.ErrnoException): void => {
    // One line per outage, not one per reconnect attempt.
    if (down) return;
    down = true;
    logger.warn({ redis: t.display, role, code: reasonOf(err) }, 'Redis connection lost; retrying');
  };
  redis.on('error', onError);
  if (redis instanceof Cluster) {
    // A cluster reports each node's faults apart, and stays ready while a
    // replica takes over: one line per node a minute, not an outage.
    const said = new Map<string, number>();
    redis.on('node error', (err: NodeJS.ErrnoException, node: string) => {
      const now = Date.now();
      if (now - (said.get(node) ?? -Infinity) < NODE_ERROR_EVERY_MS) return;
      said.set(node, now);
      logger.warn(
        { redis: t.display, role, node, code: reasonOf(err) },
        'Redis cluster node unreachable; commands go to the node that holds the slot once the cluster says which',
      );
    });
  }
  redis.on('ready', () => {
    if (down) logger.info({ redis: t.display, role }, 'Redis connection restored');
    down = false;
  });
  return redis;
}

/** The reason ioredis leaves when every sentinel connection closed without saying why. */
const NO_SENTINEL = 'no sentinel answered';

function reasonOf(err: unknown): string {
  const e = err as (NodeJS.ErrnoException & { lastNodeError?: unknown }) | undefined;
  // A cluster that could not be reached says why through its last node's error.
  if (e?.lastNodeError) return reasonOf(e.lastNodeError);
  if (e?.code) return e.code;
  const msg = (e instanceof Error ? e.message : String(err)).split('\n')[0] ?? 'error';
  // ioredis says "All sentinels are unreachable" also when they answered with an error.
  const sentinels = /^All sentinels are unreachable.*Last error: (.*)$/.exec(msg);
  if (sentinels) {
    return sentinels[1] === 'Connection is closed.' ? NO_SENTINEL : `sentinels: ${sentinels[1]}`;
  }
  return msg;
}

/**
 * Asks one node alone, as a producer would connect to it: its socket or
 * command error (ECONNREFUSED, NOAUTH, a TLS failure, or what `ask` throws),
 * or undefined when it answered.
 */
async function askAlone(
  target: Extract<RedisTarget, { kind: 'single' }>,
  ask: (probe: RedisClient) => Promise<unknown>,
): Promise<unknown> {
  const probe = clientFor('producer', target, true);
  let socketError: unknown;
  probe.on('error', (err) => (socketError ??= err));
  try {
    await probe.connect();
    await ask(probe);
    return undefined;
  } catch (err) {
    return socketError ?? err;
  } finally {
    probe.disconnect();
  }
}

/** Throws unless the node or cluster asked says `cluster_state:ok` (it serves every slot). */
async function clusterStateOk(redis: RedisClient): Promise<void> {
  const info = String(await redis.cluster('INFO'));
  if (!/^cluster_state:ok\b/m.test(info)) throw new Error('cluster_state is not ok');
}

/**
 * Resolves when Redis serves commands: it answers PING, and a cluster says
 * `cluster_state:ok` (every node answers PING while the cluster refuses
 * every command, and a cluster connection has no ready check: clientFor).
 */
export async function redisServes(redis: RedisClient): Promise<void> {
  await redis.ping();
  if (redis instanceof Cluster) await clusterStateOk(redis);
}

/**
 * Why a cluster could not be reached, asked of its seeds one by one as single
 * nodes: the first one's socket or command error (ECONNREFUSED, WRONGPASS, a
 * TLS failure, cluster support disabled), or undefined if every seed answers.
 */
async function seedFailure(t: Extract<RedisTarget, { kind: 'cluster' }>): Promise<unknown> {
  const { nodes: _nodes, kind: _kind, ...rest } = t;
  for (const node of t.nodes) {
    const failure = await askAlone({ ...rest, kind: 'single', node, db: 0 }, clusterStateOk);
    if (failure !== undefined) return failure;
  }
  return undefined;
}

/**
 * Why no sentinel answered, asked of each sentinel in turn as a single node
 * with what the sentinels get (their password, the TLS settings): the first
 * one's socket or command error (ECONNREFUSED, a TLS failure, WRONGPASS),
 * named by its address, or undefined if one answers. ioredis's own sentinel
 * connections say only "Connection is closed." whatever happened.
 */
async function sentinelFailure(
  t: Extract<RedisTarget, { kind: 'sentinel' }>,
): Promise<Error | undefined> {
  for (const node of t.sentinels) {
    const sentinel = {
      kind: 'single' as const,
      node,
      db: 0,
      display: t.display,
      ...(t.sentinelPassword !== undefined && { password: t.sentinelPassword }),
      ...(t.tls && { tls: t.tls }),
    };
    const failure = await askAlone(sentinel, (probe) =>
      probe.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', t.name),
    );
    if (failure !== undefined)
      return new Error(`sentinel ${node.host}:${node.port}: ${reasonOf(failure)}`, {
        cause: failure,
      });
  }
  return undefined;
}

/**
 * A producer connection, connected and answering PING, or a
 * `RedisUnavailableError` naming the target (without its password) and the cause.
 */
export async function connectProducer(
  target: string | RedisTarget,
  opts: ConnectOptions = {},
): Promise<RedisClient> {
  registerRedisSecrets(target);
  const t = targetOf(target);
  const redis = clientFor('producer', t, true);
  // connect() rejects with a bare "Connection is closed."; the socket's own
  // error (ECONNREFUSED, ENOTFOUND, NOAUTH…) arrives here first and says why.
  let socketError: unknown;
  redis.on('error', (err) => (socketError ??= err));
  if (redis instanceof Cluster) redis.on('node error', (err) => (socketError ??= err));
  try {
    await redis.connect();
    // A cluster connection has no ready check (clientFor): one that answers while down says so here.
    await redisServes(redis);
  } catch (err) {
    redis.disconnect();
    let cause = socketError ?? err;
    // A cluster's nodes say only "Connection is closed."; one seed alone says why. So do
    // the sentinels when none answered.
    if (t.kind === 'cluster') cause = (await seedFailure(t)) ?? cause;
    if (t.kind === 'sentinel' && reasonOf(cause) === NO_SENTINEL)
      cause = (await sentinelFailure(t)) ?? cause;
    throw new RedisUnavailableError(t.display, reasonOf(cause), { cause });
  }
  try {
    await checkTopology(redis, t);
  } catch (err) {
    redis.disconnect();
    throw err;
  }
  // Connected: from now on reconnect after blips like any other role.
  if (redis instanceof Cluster) {
    redis.options.clusterRetryStrategy = reconnectDelay;
  } else {
    redis.options.retryStrategy = reconnectDelay;
    if (t.kind === 'sentinel') redis.options.sentinelRetryStrategy = reconnectDelay;
  }
  const logger = opts.logger ?? silentLogger;
  redis.removeAllListeners('error');
  redis.removeAllListeners('node error');
  const onError = (err: NodeJS.ErrnoException): void =>
    logger.debug({ redis: t.display, code: reasonOf(err) }, 'Redis producer connection error');
  redis.on('error', onError);
  if (redis instanceof Cluster) redis.on('node error', onError);
  return redis;
}

/** Waits until a waiting-role connection is ready (it retries forever on its own). */
export async function whenReady(redis: RedisClient): Promise<void> {
  if (redis.status === 'ready') return;
  await new Promise<void>((resolve, reject) => {
    const onReady = (): void => {
      redis.off('end', onEnd);
      resolve();
    };
    const onEnd = (): void => {
      redis.off('ready', onReady);
      reject(new Error('Redis connection closed before it was ready'));
    };
    redis.once('ready', onReady);
    redis.once('end', onEnd);
  });
}

/**
 * A target of one node that reaches a Redis Cluster node works only for the
 * slots that node holds and fails on the others (MOVED): refused, with the
 * setting to use instead, before anything is written.
 */
export async function checkTopology(redis: RedisClient, target: RedisTarget): Promise<void> {
  if (target.kind !== 'single') return;
  // A user not allowed INFO cannot be told; the commands' MOVED replies will say it.
  const info = await redis
    .info('cluster')
    .catch((err: Error) => (err.message.startsWith('NOPERM') ? '' : Promise.reject(err)));
  if (/^cluster_enabled:1\b/m.test(info)) {
    const { host, port } = target.node;
    throw new ConfigError([
      `REDIS_URL: ${target.display} is a Redis Cluster node; set REDIS_CLUSTER_NODES=${host}:${port} (and keep REDIS_URL only for credentials and scheme, or unset it)`,
    ]);
  }
}

/**
 * The connections to every primary (a single node or Sentinel's primary is
 * its own): where a command about one server, not one key (INFO, SCAN), goes.
 */
export function primariesOf(redis: RedisClient): Redis[] {
  return redis instanceof Cluster ? redis.nodes('master') : [redis];
}

/**
 * BullMQ's guide: Redis must run with `maxmemory-policy noeviction`, or it may
 * evict job keys under memory pressure. Read from INFO (CONFIG is often
 * disabled on managed Redis) of every primary of a cluster (each node has its
 * own setting); warn, do not refuse, since we cannot fix it. Returns the first
 * policy that is not `noeviction`, or `noeviction`.
 */
export async function checkEvictionPolicy(
  redis: RedisClient,
  logger: Logger = silentLogger,
): Promise<string | undefined> {
  const policies = await Promise.all(
    primariesOf(redis).map(async (node) => {
      const info = await node.info('memory');
      const line = info.split(/\r?\n/).find((l) => l.startsWith('maxmemory_policy:'));
      return { node, policy: line?.slice('maxmemory_policy:'.length).trim() };
    }),
  );
  const bad = policies.find((p) => p.policy !== undefined && p.policy !== 'noeviction');
  if (bad) {
    logger.warn(
      {
        maxmemoryPolicy: bad.policy,
        ...(redis instanceof Cluster && {
          node: `${bad.node.options.host}:${bad.node.options.port}`,
        }),
      },
      'Redis maxmemory-policy is not noeviction: under memory pressure Redis may evict queue keys and lose jobs',
    );
    return bad.policy;
  }
  return policies[0]?.policy;
}

/** Closes a connection politely, falling back to a disconnect if Redis is gone. */
export async function closeRedis(redis: RedisClient): Promise<void> {
  if (redis.status === 'end') return;
  try {
    await Promise.race([
      redis.quit(),
      new Promise((_, reject) =>
        setTimeout(() => reject(new Error('quit timeout')), 1_000).unref(),
      ),
    ]);
  } catch {
    redis.disconnect();
  }
}
