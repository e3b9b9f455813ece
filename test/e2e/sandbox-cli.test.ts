/**
 * `crm-sync sandbox` as a process: prints its URL, serves the API, and exits 0
 * on SIGTERM. Runs the built CLI (`npm run build` first; `npm test` does).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';

const CLI = 'dist/cli.js';
const children: ChildProcess[] = [];

beforeAll(() => {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build first`);
});

afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
});

function start(args: string[], env: NodeJS.ProcessEnv = process.env) {
  const child = spawn(process.execPath, [CLI, 'sandbox', ...args], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const url = new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      const m = /(http:\/\/\S+)/.exec(line);
      if (m) resolve(m[1]!);
    });
    child.on('exit', (code) => reject(new Error(`sandbox exited with ${code} before its URL`)));
  });
  return { child, url, exited };
}

describe('crm-sync sandbox', () => {
  it('prints its URL, serves the API and exits 0 on SIGTERM', async () => {
    const { child, url, exited } = start(['--port', '0', '--api-key', 'k']);
    const base = await url;
    expect(base).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const made = await fetch(`${base}/companies`, {
      method: 'POST',
      headers: { Authorization: 'k', 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'From e2e' }),
    });
    expect(made.status).toBe(200);
    const list = (await (
      await fetch(`${base}/companies`, { headers: { Authorization: 'k' } })
    ).json()) as {
      count: number;
    };
    expect(list.count).toBe(1);
    expect((await fetch(`${base}/companies`)).status).toBe(401);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  it('takes the key from SANDBOX_API_KEY and applies fault options', async () => {
    const { child, url, exited } = start(['--port', '0', '--fault-rate', '1'], {
      ...process.env,
      SANDBOX_API_KEY: 'env-key',
    });
    const base = await url;
    const r = await fetch(`${base}/account`, { headers: { Authorization: 'env-key' } });
    expect(r.status).toBe(503);
    child.kill('SIGINT');
    expect(await exited).toBe(0);
  });

  it('throttles per key at a rate written as DRF writes it', async () => {
    const { child, url, exited } = start([
      '--port',
      '0',
      '--api-key',
      'k',
      '--rate-limit',
      '2/m',
      '--rate-limit-mode',
      'sliding',
    ]);
    const base = await url;
    const statuses: number[] = [];
    let retryAfter: string | null = null;
    for (let i = 0; i < 3; i++) {
      const r = await fetch(`${base}/account`, { headers: { Authorization: 'k' } });
      statuses.push(r.status);
      retryAfter = r.headers.get('retry-after');
    }
    expect(statuses).toEqual([200, 200, 429]);
    // The oldest request leaves the minute's window in a little under 60 s, rounded up.
    expect(['59', '60']).toContain(retryAfter);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    for (const [flag, value, message] of [
      ['--rate-limit', '10/fortnight', /--rate-limit must be N\/s, N\/m, N\/h, N\/d/],
      ['--rate-limit-mode', 'leaky', /--rate-limit-mode must be one of sliding, fixed, bucket/],
    ] as const) {
      const r = spawnSync(process.execPath, [CLI, 'sandbox', '--api-key', 'k', flag, value], {
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(r.status).not.toBe(0);
      expect(r.stderr).toMatch(message);
    }
  });

  it('refuses bad option values with a one-line error', () => {
    const r = spawnSync(
      process.execPath,
      [CLI, 'sandbox', '--api-key', 'k', '--drop-after-commit', '1.5'],
      {
        encoding: 'utf8',
        timeout: 30_000,
      },
    );
    expect(r.status).not.toBe(0);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/--drop-after-commit must be between 0 and 1/);
    const noKey = spawnSync(process.execPath, [CLI, 'sandbox'], {
      encoding: 'utf8',
      timeout: 30_000,
      env: { ...process.env, SANDBOX_API_KEY: '' },
    });
    expect(noKey.status).toBe(2);
    expect(noKey.stderr).toMatch(/API key is required/);
  });
});
