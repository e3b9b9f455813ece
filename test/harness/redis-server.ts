import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A free TCP port on 127.0.0.1, as the kernel hands it out. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      if (addr === null || typeof addr === 'string') return reject(new Error('no port'));
      srv.close(() => resolve(addr.port));
    });
  });
}

export interface RedisServer {
  url: string;
  port: number;
  /** Its data directory (AOF lives here when `appendonly` is set). */
  dir: string;
  /** Stops the server (SIGTERM, or SIGKILL with `hard`) and waits for it to exit. */
  stop(hard?: boolean): Promise<void>;
  /** Starts it again on the same port and data directory. */
  start(): Promise<void>;
}

/**
 * What every test redis-server is started with: no RDB snapshots, BullMQ's
 * eviction rule (`noeviction`), and no protected mode (loopback only, no
 * password). Persistence beyond that is each starter's own.
 */
export const TEST_SERVER_ARGS: readonly string[] = [
  '--save',
  '',
  '--maxmemory-policy',
  'noeviction',
  '--protected-mode',
  'no',
];

/**
 * A redis-server of our own, on a free port, in a temporary directory. Used by
 * the test harness, by chaos tests that need to restart Redis, and by the demo
 * (scripts/demo-redis.ts) when no Redis answers: we never touch a Redis we did
 * not start. Rejects with the spawn error (`code` ENOENT: no redis-server on
 * the PATH) or the server's output, and removes the directory, when it does
 * not start.
 */
export async function startRedisServer(
  opts: {
    appendonly?: boolean;
    /** When the AOF is fsynced (default `always`, so that a restart keeps every acknowledged write). */
    appendfsync?: 'always' | 'everysec' | 'no';
    /**
     * In a process group of its own, so that a Ctrl-C at the terminal reaches
     * only the caller, which stops the server once it is done with it.
     */
    ownProcessGroup?: boolean;
  } = {},
): Promise<RedisServer> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'crm-sync-redis-'));
  let child: ChildProcess | undefined;

  const start = async (): Promise<void> => {
    const args = [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--appendonly',
      opts.appendonly ? 'yes' : 'no',
      '--appendfsync',
      opts.appendfsync ?? 'always',
      ...TEST_SERVER_ARGS,
    ];
    const proc = spawn('redis-server', args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: opts.ownProcessGroup ?? false,
    });
    child = proc;
    await new Promise<void>((resolve, reject) => {
      let out = '';
      const onData = (b: Buffer): void => {
        out += b.toString();
        if (out.includes('Ready to accept connections')) {
          proc.stdout?.off('data', onData);
          resolve();
        }
      };
      proc.stdout?.on('data', onData);
      proc.once('error', reject);
      proc.once('exit', (code) => reject(new Error(`redis-server exited (${code}): ${out}`)));
    });
  };

  const stop = async (hard = false): Promise<void> => {
    const proc = child;
    if (!proc || proc.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      proc.once('exit', () => resolve());
      proc.kill(hard ? 'SIGKILL' : 'SIGTERM');
    });
  };

  try {
    await start();
  } catch (err) {
    removeDir(dir);
    throw err;
  }
  return { url: `redis://127.0.0.1:${port}`, port, dir, start, stop };
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}
