/**
 * The Docker image, replayed without Docker (test/harness/dockerfile.ts) from
 * the Dockerfile itself: the build stage installs (npm ci, from npm's local
 * cache where it can) and compiles, the sandbox stage serves the emulator, and
 * the runtime stage, pruned of dev dependencies, runs crm-sync without the
 * sandbox package or csv-parse, and answers `crm-sync sandbox` with one line.
 * Slow (a whole install and build): about a minute.
 */
import { spawn } from 'node:child_process';
import { lstatSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_NOT_INSTALLED } from '../../src/cli/sandbox.js';
import { cliEnv, ROOT } from '../harness/cli.js';
import { DockerfileReplay, type Stage } from '../harness/dockerfile.js';

const workspace = mkdtempSync(join(tmpdir(), 'crm-sync-image-'));
let sandboxStage: Stage;
let runtime: Stage;

beforeAll(async () => {
  const replay = new DockerfileReplay(
    join(ROOT, 'Dockerfile'),
    ROOT,
    workspace,
    cliEnv({ npm_config_prefer_offline: 'true', npm_config_update_notifier: 'false' }),
  );
  sandboxStage = await replay.stage('sandbox');
  runtime = await replay.stage('runtime');
}, 300_000);

afterAll(() => rmSync(workspace, { recursive: true, force: true }));

/** Whether a path is there, a dangling link included. */
const present = (path: string) => lstatSync(path, { throwIfNoEntry: false }) !== undefined;

/** `docker run IMAGE ...args`: the stage's entrypoint, its ENV and PATH only. */
function container(stage: Stage, args: string[], env: Record<string, string> = {}) {
  const [command, ...rest] = stage.entrypoint;
  return spawn(command!, [...rest, ...args], {
    cwd: DockerfileReplay.path(stage, '.'),
    env: { PATH: process.env.PATH, ...DockerfileReplay.env(stage), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

function runContainer(stage: Stage, args: string[]) {
  const child = container(stage, args);
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (c: Buffer) => (out.stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out.stderr += c.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, ...out });
    }),
  );
}

describe('the image (Dockerfile replayed)', () => {
  it('runtime: no sandbox package and no csv-parse, only production dependencies', () => {
    const modules = DockerfileReplay.path(runtime, 'node_modules');
    expect(present(join(modules, 'commander'))).toBe(true);
    expect(present(join(modules, '@crm-sync/platform-sandbox'))).toBe(false);
    expect(present(join(modules, 'csv-parse'))).toBe(false);
    expect(present(join(modules, 'vitest'))).toBe(false);
    expect(present(DockerfileReplay.path(runtime, 'packages'))).toBe(false);
  });

  it('runtime: crm-sync --help works', async () => {
    const r = await runContainer(runtime, ['--help']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^Usage: crm-sync /);
    expect(r.stdout).toMatch(/\bsandbox\b/);
  });

  it('runtime: crm-sync sandbox says in one line that the sandbox is not installed', async () => {
    const r = await runContainer(runtime, ['sandbox']);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`crm-sync: ${SANDBOX_NOT_INSTALLED}\n`);
  });

  it('runtime: crm-sync validate accepts the example jobs', async () => {
    const jobs = readdirSync(DockerfileReplay.path(runtime, 'jobs')).filter((f) =>
      f.endsWith('.yaml'),
    );
    expect(jobs.length).toBeGreaterThan(0);
    const r = await runContainer(runtime, ['validate']);
    // stderr carries warnings and path coverage; problems would make the code 3.
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.split('\n').filter((l) => l.startsWith('ok '))).toHaveLength(jobs.length);
  });

  it('sandbox stage: serves the platform API', async () => {
    const child = container(sandboxStage, ['--host', '127.0.0.1', '--port', '0'], {
      SANDBOX_API_KEY: 'image-steps-key',
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        createInterface({ input: child.stdout }).on('line', (line) => {
          const m = /(http:\/\/\S+)/.exec(line);
          if (m) resolve(m[1]!);
        });
        child.on('exit', (code) => reject(new Error(`sandbox exited ${code} before its URL`)));
      });
      const list = await fetch(`${url}/companies`, {
        headers: { Authorization: 'image-steps-key' },
      });
      expect(list.status).toBe(200);
      expect(await list.json()).toMatchObject({ count: 0, results: [] });
      expect((await fetch(`${url}/__sandbox/stats`)).status).toBe(200);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  });
});
