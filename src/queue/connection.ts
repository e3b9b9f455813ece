/**
 * Redis connections, one factory per role. BullMQ's production guide asks for
 * two kinds: workers (and anything long-running) wait for Redis forever, so a
 * Redis restart pauses work instead of dropping it; producers driven by a user
 * (the CLI) fail fast with one clear line. The Redis password is registered as
 * a secret before any connection is made, and URLs are printed without it.
 */
import { Redis, type RedisOptions } from 'ioredis';
import { registerSecret, silentLogger, type Logger } from '../log.js';

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

/** The URL with any user name and password removed, for messages and logs. */
export function safeRedisUrl(url: string): string {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    return u.toString().replace(/\/$/, '');
  } catch {
    return 'redis://[unparseable URL]';
  }
}

/** Registers the password of a Redis URL (raw and decoded) as a secret. */
export function registerRedisSecrets(url: string): void {
  try {
    const u = new URL(url);
    if (u.password) {
      registerSecret(u.password);
      registerSecret(decodeURIComponent(u.password));
    }
  } catch {
    // An unparseable URL is reported by config validation; nothing to register.
  }
}

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

export interface ConnectOptions {
  logger?: Logger;
}

/**
 * A Redis connection for a role, with its error listener attached (an
 * ioredis client without one crashes the process on the first fault). The
 * connection is not awaited; use `connectProducer` where failing fast matters.
 */
export function createRedis(role: RedisRole, url: string, opts: ConnectOptions = {}): Redis {
  registerRedisSecrets(url);
  const logger = opts.logger ?? silentLogger;
  const redis = new Redis(url, redisOptionsFor(role));
  const safeUrl = safeRedisUrl(url);
  let down = false;
  redis.on('error', (err: NodeJS.ErrnoException) => {
    // One line per outage, not one per reconnect attempt.
    if (down) return;
    down = true;
    logger.warn({ redis: safeUrl, role, code: err.code }, 'Redis connection lost; retrying');
  });
  redis.on('ready', () => {
    if (down) logger.info({ redis: safeUrl, role }, 'Redis connection restored');
    down = false;
  });
  return redis;
}

function reasonOf(err: unknown): string {
  const e = err as NodeJS.ErrnoException | undefined;
  if (e?.code) return e.code;
  const msg = e instanceof Error ? e.message : String(err);
  return msg.split('\n')[0] ?? 'error';
}

/**
 * A producer connection, connected and answering PING, or a
 * `RedisUnavailableError` naming the URL (without its password) and the cause.
 */
export async function connectProducer(url: string, opts: ConnectOptions = {}): Promise<Redis> {
  registerRedisSecrets(url);
  const redis = new Redis(url, { ...redisOptionsFor('producer'), retryStrategy: () => null });
  // connect() rejects with a bare "Connection is closed."; the socket's own
  // error (ECONNREFUSED, ENOTFOUND, NOAUTH…) arrives here first and says why.
  let socketError: unknown;
  redis.on('error', (err) => (socketError ??= err));
  try {
    await redis.connect();
    await redis.ping();
  } catch (err) {
    redis.disconnect();
    const cause = socketError ?? err;
    throw new RedisUnavailableError(safeRedisUrl(url), reasonOf(cause), { cause });
  }
  // Connected: from now on reconnect after blips like any other role.
  redis.options.retryStrategy = reconnectDelay;
  const logger = opts.logger ?? silentLogger;
  redis.removeAllListeners('error');
  redis.on('error', (err: NodeJS.ErrnoException) =>
    logger.debug({ redis: safeRedisUrl(url), code: err.code }, 'Redis producer connection error'),
  );
  return redis;
}

/** Waits until a waiting-role connection is ready (it retries forever on its own). */
export async function whenReady(redis: Redis): Promise<void> {
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
 * BullMQ's guide: Redis must run with `maxmemory-policy noeviction`, or it may
 * evict job keys under memory pressure. Read from INFO (CONFIG is often
 * disabled on managed Redis); warn, do not refuse, since we cannot fix it.
 */
export async function checkEvictionPolicy(
  redis: Redis,
  logger: Logger = silentLogger,
): Promise<string | undefined> {
  const info = await redis.info('memory');
  const line = info.split(/\r?\n/).find((l) => l.startsWith('maxmemory_policy:'));
  const policy = line?.slice('maxmemory_policy:'.length).trim();
  if (policy !== undefined && policy !== 'noeviction') {
    logger.warn(
      { maxmemoryPolicy: policy },
      'Redis maxmemory-policy is not noeviction: under memory pressure Redis may evict queue keys and lose jobs',
    );
  }
  return policy;
}

/** Closes a connection politely, falling back to a disconnect if Redis is gone. */
export async function closeRedis(redis: Redis): Promise<void> {
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
