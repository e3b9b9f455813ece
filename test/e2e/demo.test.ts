/**
 * `npm run demo` (scripts/demo.ts, run as npm runs it: tsx with the `source`
 * condition) when nothing answers at REDIS_URL: a closed port on 127.0.0.1,
 * never the machine's own Redis. With redis-server on the PATH the demo starts
 * a private one, says so, runs every example job, and stops and removes it at
 * the end, also on Ctrl-C (SIGINT to its whole process group, as a terminal
 * sends it); without one it says how to get one.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { finished } from 'node:stream/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { cliEnv, killAll, ROOT, spawnNode, type CliProcess } from '../harness/cli.js';
import { freePort } from '../harness/redis-server.js';

const DEMO = ['--import', 'tsx', '--conditions=source', 'scripts/demo.ts'];
const STARTED =
  /^Redis at redis:\/\/127\.0\.0\.1:(\d+) is not reachable \(ECONNREFUSED\): started a private redis-server at redis:\/\/127\.0\.0\.1:(\d+) in (\S+) \(no persistence; stopped and removed at the end\)$/;
// One run per job file, and the companies job once more.
const RUNS = readdirSync(join(ROOT, 'jobs')).filter((f) => /\.ya?ml$/.test(f)).length + 1;

const demos: CliProcess[] = [];
afterEach(async () => {
  // A demo left running is asked to clean up (its private redis-server with it), then killed.
  for (const d of demos.splice(0)) {
    d.kill('SIGCONT');
    d.kill('SIGINT');
    const timer = setTimeout(() => d.kill('SIGKILL'), 15_000);
    await d.exited;
    clearTimeout(timer);
  }
  await killAll();
});

async function demo(
  args: string[],
  vars: Record<string, string>,
  detached = false,
): Promise<CliProcess> {
  const closed = await freePort();
  const d = spawnNode(
    [...DEMO, ...args],
    cliEnv({ REDIS_URL: `redis://127.0.0.1:${closed}`, OPS_PORT: 0, ...vars }),
    { detached },
  );
  demos.push(d);
  return d;
}

/** The exit of a demo once its output has been read to the end. */
async function ended(d: CliProcess): Promise<{ code: number | null; signal: string | null }> {
  const exit = await d.exited;
  await Promise.all([finished(d.child.stdout!), finished(d.child.stderr!)]);
  return exit;
}

/** Whether anything accepts a connection on 127.0.0.1:port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** The private server the demo announced: its port and directory, checked to be up. */
async function announced(d: CliProcess): Promise<{ port: number; dir: string }> {
  const line = await d.waitForLine(STARTED, { stream: 'stdout', timeoutMs: 30_000 });
  const [, , port, dir] = STARTED.exec(line)!;
  expect(existsSync(dir!)).toBe(true);
  expect(await listening(Number(port))).toBe(true);
  return { port: Number(port), dir: dir! };
}

describe('npm run demo with no Redis reachable', () => {
  it('starts a private redis-server, completes every run on it, then stops and removes it', async () => {
    const d = await demo(['--no-serve'], {});
    const server = await announced(d);
    expect(await ended(d)).toEqual({ code: 0, signal: null });
    const out = d.stdout.join('\n');
    expect(out).toContain(`Redis redis://127.0.0.1:${server.port},`);
    expect(out.match(/^run \S+ \(\S+\): completed$/gm)).toHaveLength(RUNS);
    expect(out).toContain('  writes: 0 (created 0, updated 0)');
    expect(d.stdout.at(-1)).toMatch(
      /^cleaned up: \d+ key\(s\) under \S+ deleted, sandbox stopped, private redis-server stopped and removed$/,
    );
    expect(await listening(server.port)).toBe(false);
    expect(existsSync(server.dir)).toBe(false);
  });

  it('on Ctrl-C at the terminal, stops and removes the private redis-server too', async () => {
    const d = await demo(['--serve'], {}, true);
    const server = await announced(d);
    await d.waitForLine(/Ctrl-C to stop\)$/, { stream: 'stdout', timeoutMs: 120_000 });
    // A terminal's Ctrl-C reaches every process of the foreground group. The demo is
    // frozen meanwhile: its private redis-server must not have got the signal (it would
    // be gone before the demo had deleted its keys), only the demo, once thawed.
    process.kill(d.child.pid!, 'SIGSTOP');
    process.kill(-d.child.pid!, 'SIGINT');
    await new Promise((r) => setTimeout(r, 1_000));
    expect(await listening(server.port)).toBe(true);
    process.kill(d.child.pid!, 'SIGCONT');
    expect(await ended(d)).toEqual({ code: 130, signal: null });
    expect(d.stdout.at(-1)).toMatch(/, private redis-server stopped and removed$/);
    expect(await listening(server.port)).toBe(false);
    expect(existsSync(server.dir)).toBe(false);
  });

  it('without redis-server on the PATH, says how to get one', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'crm-sync-no-redis-'));
    try {
      const d = await demo(['--no-serve'], { PATH: empty });
      expect(await ended(d)).toEqual({ code: 1, signal: null });
      expect(d.stdout).toEqual([]);
      expect(d.stderr.join('\n')).toMatch(
        /^demo: Redis at redis:\/\/127\.0\.0\.1:\d+ is not reachable \(ECONNREFUSED\), and there is no redis-server on the PATH to start a private one: install one \(Debian, Ubuntu: apt-get install redis-server\) or set REDIS_URL to a Redis$/,
      );
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
