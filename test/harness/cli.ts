/**
 * End-to-end tests drive the built CLI (`node dist/cli.js …`, `npm run build`
 * first) as separate processes: this module spawns them with a clean
 * environment, captures stdout and stderr by line, waits for lines, and kills
 * whatever is left (`killAll` in an afterEach). It also writes temporary job
 * folders and exports, and reads the sandbox's `/__sandbox/` routes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '../..');
export const CLI = join(ROOT, 'dist/cli.js');

const children = new Set<ChildProcess>();

/** Throws unless the CLI was built (`npm run build`; `npm test` does it). */
export function requireBuild(): void {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build first`);
}

// Settings of the outer shell must not leak into a test's processes.
const OWN_VARIABLES =
  /^(REDIS_URL|PLATFORM_|CRM_SYNC_|OPS_|WORKER_|WRITE_|RATE_LIMIT_|SHUTDOWN_|LOG_LEVEL|SANDBOX_)/;

/** The environment of a CLI process: the parent's, without crm-sync settings, plus `vars`. */
export function cliEnv(vars: Record<string, string | number | undefined>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!OWN_VARIABLES.test(k)) env[k] = v;
  for (const [k, v] of Object.entries(vars)) if (v !== undefined) env[k] = String(v);
  return env;
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface CliProcess {
  child: ChildProcess;
  /** Lines seen so far on each stream. */
  stdout: string[];
  stderr: string[];
  exited: Promise<Exit>;
  /** Resolves with the first line (past or future) of `stream` that matches. */
  waitForLine(
    match: RegExp | ((line: string) => boolean),
    opts?: { stream?: 'stdout' | 'stderr'; timeoutMs?: number },
  ): Promise<string>;
  kill(signal?: NodeJS.Signals): void;
}

/** Starts `node dist/cli.js ...args` in the repository root. */
export function spawnCli(args: string[], env: NodeJS.ProcessEnv): CliProcess {
  return spawnNode([CLI, ...args], env);
}

/**
 * Starts `node ...args` in the repository root (a script: `['--import', 'tsx', 'scripts/…']`),
 * in a process group of its own with `detached` (signal it as a terminal would: `process.kill(-pid)`).
 */
export function spawnNode(
  args: string[],
  env: NodeJS.ProcessEnv,
  opts: { detached?: boolean } = {},
): CliProcess {
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: opts.detached ?? false,
  });
  children.add(child);
  const lines = { stdout: [] as string[], stderr: [] as string[] };
  const waiters: {
    stream: 'stdout' | 'stderr';
    test: (l: string) => boolean;
    done: (l: string) => void;
  }[] = [];
  for (const stream of ['stdout', 'stderr'] as const) {
    let rest = '';
    child[stream]!.setEncoding('utf8');
    child[stream]!.on('data', (chunk: string) => {
      const parts = (rest + chunk).split('\n');
      rest = parts.pop()!;
      for (const line of parts) {
        lines[stream].push(line);
        for (const w of [...waiters]) {
          if (w.stream === stream && w.test(line)) {
            waiters.splice(waiters.indexOf(w), 1);
            w.done(line);
          }
        }
      }
    });
    child[stream]!.on('end', () => {
      if (rest) lines[stream].push(rest);
    });
  }
  const exited = new Promise<Exit>((resolve) =>
    child.once('exit', (code, signal) => {
      children.delete(child);
      resolve({ code, signal });
    }),
  );
  return {
    child,
    stdout: lines.stdout,
    stderr: lines.stderr,
    exited,
    waitForLine(match, opts = {}) {
      const stream = opts.stream ?? 'stderr';
      const test = typeof match === 'function' ? match : (l: string) => match.test(l);
      const seen = lines[stream].find(test);
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(waiter), 1);
          reject(
            new Error(
              `no ${stream} line matching ${String(match)} within ${opts.timeoutMs ?? 30_000} ms; ` +
                `last lines:\n${lines[stream].slice(-10).join('\n')}`,
            ),
          );
        }, opts.timeoutMs ?? 30_000);
        const waiter = {
          stream,
          test,
          done: (l: string) => {
            clearTimeout(timer);
            resolve(l);
          },
        };
        waiters.push(waiter);
        void exited.then(({ code, signal }) => {
          if (!waiters.includes(waiter)) return;
          waiters.splice(waiters.indexOf(waiter), 1);
          clearTimeout(timer);
          reject(
            new Error(
              `process exited (${code ?? signal}) before a ${stream} line matching ${String(match)}; ` +
                `stderr:\n${lines.stderr.slice(-10).join('\n')}`,
            ),
          );
        });
      });
    },
    kill(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    },
  };
}

export interface CliResult extends Exit {
  stdout: string;
  stderr: string;
}

/** Runs a CLI command to its end (killed after `timeoutMs`). */
export async function runCli(
  args: string[],
  env: NodeJS.ProcessEnv,
  timeoutMs = 90_000,
): Promise<CliResult> {
  const p = spawnCli(args, env);
  const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
  const exit = await p.exited;
  clearTimeout(timer);
  // Let the streams deliver their last bytes.
  await new Promise((r) => setImmediate(r));
  return { ...exit, stdout: joined(p.stdout), stderr: joined(p.stderr) };
}

const joined = (lines: string[]) => (lines.length ? `${lines.join('\n')}\n` : '');

/** Kills (SIGKILL) every CLI process a test left running. */
export async function killAll(): Promise<void> {
  const left = [...children];
  await Promise.all(
    left.map(
      (c) =>
        new Promise<void>((resolve) => {
          if (c.exitCode !== null || c.signalCode !== null) return resolve();
          c.once('exit', () => resolve());
          c.kill('SIGKILL');
        }),
    ),
  );
}

// ---- the sandbox ---------------------------------------------------------------

export interface SandboxProcess {
  url: string;
  proc: CliProcess;
}

/** `crm-sync sandbox --port 0 --api-key KEY ...args`, once it prints its URL. */
export async function startSandboxProcess(
  apiKey: string,
  args: string[] = [],
): Promise<SandboxProcess> {
  const proc = spawnCli(['sandbox', '--port', '0', '--api-key', apiKey, ...args], cliEnv({}));
  const line = await proc.waitForLine(/http:\/\/127\.0\.0\.1:\d+/, { stream: 'stdout' });
  return { url: /(http:\/\/127\.0\.0\.1:\d+)/.exec(line)![1]!, proc };
}

export interface StatsEntry {
  method: string;
  route: string;
  status: number;
  count: number;
}

export async function sandboxStats(url: string): Promise<StatsEntry[]> {
  const res = await fetch(`${url}/__sandbox/stats`);
  return ((await res.json()) as { requests: StatsEntry[] }).requests;
}

/** Requests served with this method on routes starting with `route`, optionally of one status class. */
export function countRequests(
  entries: readonly StatsEntry[],
  method: string,
  route: string,
  ok?: boolean,
): number {
  return entries
    .filter(
      (e) =>
        e.method === method &&
        e.route.startsWith(route) &&
        (ok === undefined || (e.status >= 200 && e.status < 300) === ok),
    )
    .reduce((n, e) => n + e.count, 0);
}

export type Dump = Record<string, Record<string, unknown>[]>;

export async function sandboxDump(url: string): Promise<Dump> {
  const res = await fetch(`${url}/__sandbox/dump`);
  return (await res.json()) as Dump;
}

// ---- job folders and exports ------------------------------------------------------

export interface TempDir {
  dir: string;
  path(name: string): string;
  write(name: string, text: string): string;
  remove(): void;
}

export function tempDir(tag: string): TempDir {
  const dir = mkdtempSync(join(tmpdir(), `crm-sync-${tag}-`));
  return {
    dir,
    path: (name) => join(dir, name),
    write(name, text) {
      writeFileSync(join(dir, name), text);
      return join(dir, name);
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** A job file for the hubspot-companies preset reading `path`; thresholds loose enough for test data. */
export function companiesJob(path: string, extra = ''): string {
  return [
    'entity: companies',
    'source:',
    `  path: ${JSON.stringify(path)}`,
    'mapping: hubspot-companies',
    'thresholds:',
    '  maxInvalidShare: 0.5',
    '  maxChangeShare: 1',
    extra,
    '',
  ].join('\n');
}

const HUBSPOT_HEADER = [
  'Record ID',
  'Company name',
  'Company Domain Name',
  'Website URL',
  'Company owner',
  'Create Date',
  'Last Activity Date',
  'Phone Number',
  'City',
  'State/Region',
  'Country/Region',
  'Industry',
  'Number of Employees',
  'Annual Revenue',
];

/** A CSV cell, quoted where RFC 4180 needs it. */
export const csvField = (v: string): string =>
  /[",\r\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v;

/**
 * A HubSpot companies export of `n` valid rows (Record ID 1000+i, name
 * `Company i`), then `extra` rows given as partial column maps.
 */
export function companiesCsv(n: number, extra: Record<string, string>[] = []): string {
  const rows = Array.from({ length: n }, (_, i) => ({
    'Record ID': String(1000 + i),
    'Company name': `Company ${i}`,
    'Company Domain Name': `c${i}.example`,
  }));
  const lines = [HUBSPOT_HEADER.join(',')];
  for (const r of [...rows, ...extra] as Record<string, string>[]) {
    lines.push(HUBSPOT_HEADER.map((h) => csvField(r[h] ?? '')).join(','));
  }
  return `${lines.join('\n')}\n`;
}

/** Polls `cond` until it holds, or throws naming `what`. */
export async function waitUntil(
  cond: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 60_000,
  everyMs = 100,
): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
