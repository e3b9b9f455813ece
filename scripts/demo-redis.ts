/**
 * The demo's Redis: the one `url` names when it answers; when nothing answers
 * there (refused, no such host, unreachable, timed out), a private
 * redis-server started with the test harness's `startRedisServer` (a free
 * port on 127.0.0.1, a temporary directory, no persistence, in a process
 * group of its own so that Ctrl-C reaches the demo first) that `close` stops
 * and removes. Without a redis-server on the PATH it says how to get one.
 * A Redis that answers but refuses (a password, TLS) is an error as before.
 */
import {
  closeRedis,
  connectProducer,
  RedisUnavailableError,
  safeRedisUrl,
  type RedisClient,
} from '../src/redis/connection.js';
import { removeDir, startRedisServer } from '../test/harness/redis-server.js';

export interface DemoRedis {
  client: RedisClient;
  url: string;
  /** The line saying a private redis-server was started and where; undefined for `url`'s. */
  started?: string;
  /** Closes the connection, then stops a private server and removes its directory. */
  close(): Promise<void>;
}

/** Socket errors that mean no Redis is there at all. */
const NOTHING_THERE = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'ETIMEDOUT',
]);

export async function openDemoRedis(url: string): Promise<DemoRedis> {
  try {
    const client = await connectProducer(url);
    return { client, url, close: () => closeRedis(client) };
  } catch (err) {
    if (!(err instanceof RedisUnavailableError)) throw err;
    const code = (err.cause as NodeJS.ErrnoException | undefined)?.code;
    if (code === undefined || !NOTHING_THERE.has(code)) throw err;
    return startPrivate(err);
  }
}

async function startPrivate(unreachable: RedisUnavailableError): Promise<DemoRedis> {
  const server = await startRedisServer({ ownProcessGroup: true }).catch((err: unknown) => {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    throw new Error(
      `${unreachable.message}, and there is no redis-server on the PATH to start a private one: ` +
        'install one (Debian, Ubuntu: apt-get install redis-server) or set REDIS_URL to a Redis',
    );
  });
  const stop = async (): Promise<void> => {
    await server.stop();
    removeDir(server.dir);
  };
  let client: RedisClient;
  try {
    client = await connectProducer(server.url);
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    client,
    url: server.url,
    started:
      `${unreachable.message}: started a private redis-server at ${safeRedisUrl(server.url)} ` +
      `in ${server.dir} (no persistence; stopped and removed at the end)`,
    async close() {
      try {
        await closeRedis(client);
      } finally {
        await stop();
      }
    },
  };
}
