/**
 * The built CLI (`node dist/cli.js`) as the benchmarks run it: a private
 * redis-server (never the shared one unless REDIS_URL is given, and then
 * under a prefix of our own that is deleted afterwards), a temporary jobs
 * folder, and the environment a deployment would set. Worker processes are
 * spawned and stopped with SIGTERM by their pid; runs are enqueued with
 * `crm-sync run JOB --wait --json` and their JSON summary returned.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import {
  createWriteStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { stringify } from 'yaml';
import type { RunSummary } from '../../src/engine/run-summary.js';
import { startRedisServer, type RedisServer } from '../../test/harness/redis-server.js';

export const ROOT = resolve(fileURLToPath(import.meta.url), '..', '..', '..');
export const CLI = join(ROOT, 'dist', 'cli.js');

export class BenchError extends Error {
  readonly code = 'bench.failed';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'BenchError';
  }
}

export function requireBuild(): void {
  if (!existsSync(CLI)) throw new BenchError(`${CLI} is missing: run npm run build first`);
}

/** A Redis for one scenario: a private server, or REDIS_URL with a prefix of our own. */
export interface BenchRedis {
  url: string;
  /** REDIS_URL's server, which others may use: no CONFIG or statistics resets there. */
  shared: boolean;
  /** A fresh `{…}` prefix for one sync (its keys are deleted by `close`). */
  prefix(name: string): string;
  close(): Promise<void>;
}

export async function openBenchRedis(): Promise<BenchRedis> {
  const given = process.env.REDIS_URL;
  const server: RedisServer | undefined = given ? undefined : await startRedisServer();
  const url = given ?? server!.url;
  const used: string[] = [];
  const tag = Math.random().toString(36).slice(2, 8);
  return {
    url,
    shared: given !== undefined,
    prefix(name) {
      const p = `{crm-sync-bench-${tag}-${name}}`;
      used.push(p);
      return p;
    },
    async close() {
      if (server) {
        await server.stop();
        rmSync(server.dir, { recursive: true, force: true });
        return;
      }
      // A shared Redis: delete only what we wrote.
      const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
      await redis.connect();
      for (const p of used) {
        let cursor = '0';
        do {
          const [next, keys] = await redis.scan(cursor, 'MATCH', `${p}*`, 'COUNT', 1000);
          cursor = next;
          if (keys.length > 0) await redis.unlink(...keys);
        } while (cursor !== '0');
      }
      redis.disconnect();
    },
  };
}

/** A temporary jobs folder holding one hubspot-companies job per export path. */
export interface JobsDir {
  dir: string;
  /** Writes `<name>.yaml` for the hubspot-companies preset reading `path`. */
  write(name: string, path: string): void;
  remove(): void;
}

export function jobsDir(): JobsDir {
  const dir = mkdtempSync(join(tmpdir(), 'crm-sync-bench-jobs-'));
  return {
    dir,
    write(name, path) {
      const job = {
        entity: 'companies',
        source: { path },
        mapping: 'hubspot-companies',
        // A nightly run changing 1% is far from the limits; a first sync is not checked.
        thresholds: { maxChangeShare: 1 },
      };
      writeFileSync(join(dir, `${name}.yaml`), stringify(job));
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

export interface SyncEnv {
  redisUrl: string;
  prefix: string;
  baseUrl: string;
  apiKey: string;
  rateLimit: number;
  jobs: string;
  extra?: Record<string, string>;
}

/** The environment of a CLI process, as a deployment would set it. */
export function cliEnv(e: SyncEnv): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    REDIS_URL: e.redisUrl,
    CRM_SYNC_PREFIX: e.prefix,
    PLATFORM_BASE_URL: e.baseUrl,
    PLATFORM_API_KEY: e.apiKey,
    PLATFORM_RATE_LIMIT: String(e.rateLimit),
    CRM_SYNC_JOBS_DIR: e.jobs,
    CRM_SYNC_MAPPINGS_DIR: join(ROOT, 'config', 'mappings'),
    LOG_LEVEL: process.env.BENCH_WORKER_LOG ? 'info' : 'error',
    OPS_PORT: '0',
    ...e.extra,
  };
}

/**
 * Node's flags for every CLI process: BENCH_NODE_FLAGS, split at spaces (V8's
 * too, e.g. `--max-opt=1` to leave optimizing compilers out); with
 * BENCH_CPU_PROF=DIR, a V8 CPU profile written there (to see where time goes).
 */
function nodeFlags(): string[] {
  const dir = process.env.BENCH_CPU_PROF;
  const given = process.env.BENCH_NODE_FLAGS?.split(' ').filter((f) => f !== '') ?? [];
  return [...given, ...(dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}`] : [])];
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
  /** CPU seconds (user + system) of the process, as last read from /proc before it exited. */
  cpuS: number;
}

/**
 * CPU seconds (user + system) a live process has used, from /proc (Linux);
 * NaN elsewhere. With `mainOnly`, its main thread's alone (node's event loop;
 * the rest is V8's compiler and GC threads and libuv's pool).
 */
export function processCpuSeconds(pid: number | undefined, mainOnly = false): number {
  if (pid === undefined) return NaN;
  try {
    const stat = readFileSync(
      mainOnly ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`,
      'utf8',
    );
    // Fields after the command name (which may hold spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return NaN;
  }
}

/** USER_HZ: 100 on every Linux the project targets. */
const CLOCK_TICKS = 100;

/** Keeps the latest CPU reading of a child (and of its main thread) until it exits. */
function watchCpu(child: ChildProcess): { last(): number; lastMain(): number; stop(): void } {
  let last = NaN;
  let lastMain = NaN;
  const timer = setInterval(() => {
    const v = processCpuSeconds(child.pid);
    const m = processCpuSeconds(child.pid, true);
    if (Number.isFinite(v) && Number.isFinite(m)) [last, lastMain] = [v, m];
  }, 100);
  return { last: () => last, lastMain: () => lastMain, stop: () => clearInterval(timer) };
}

/**
 * CPU seconds redis-server has used, commands it has processed (INFO), and
 * `calls`: the sum of INFO commandstats, which counts the commands Lua
 * scripts run as well as the script calls; `scripts`: the script calls.
 */
export async function redisCounters(url: string): Promise<{
  cpuS: number;
  commands: number;
  calls: number;
  scripts: number;
  usedMemory: number;
}> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  try {
    const info = await redis.info('all');
    const field = (name: string): number => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1]);
    let calls = 0;
    for (const m of info.matchAll(/^cmdstat_[^:]+:calls=(\d+)/gm)) calls += Number(m[1]);
    let scripts = 0;
    for (const m of info.matchAll(/^cmdstat_(?:evalsha|eval):calls=(\d+)/gm))
      scripts += Number(m[1]);
    return {
      cpuS: field('used_cpu_user') + field('used_cpu_sys'),
      commands: field('total_commands_processed'),
      calls,
      scripts,
      usedMemory: field('used_memory'),
    };
  } finally {
    redis.disconnect();
  }
}

/** Runs `node dist/cli.js ARGS` to its end (killed after `timeoutMs`). */
export function runCli(
  args: string[],
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
): Promise<CliResult> {
  const t0 = performance.now();
  const child = spawn(process.execPath, [...nodeFlags(), CLI, ...args], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  const cpu = watchCpu(child);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      cpu.stop();
      child.kill('SIGKILL');
      reject(
        new BenchError(
          `crm-sync ${args.join(' ')} took over ${timeoutMs} ms: ${stderr.slice(-2000)}`,
        ),
      );
    }, timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      cpu.stop();
      reject(new BenchError(`cannot start crm-sync ${args[0]}`, { cause: err }));
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      cpu.stop();
      resolve({ code, stdout, stderr, ms: performance.now() - t0, cpuS: cpu.last() });
    });
  });
}

/** `crm-sync run JOB --wait --json [--with-worker]`: the run's summary, or an error with stderr. */
export async function syncRun(
  job: string,
  env: NodeJS.ProcessEnv,
  opts: { withWorker: boolean; timeoutMs: number; source?: string },
): Promise<RunSummary & { wallMs: number; cpuS: number }> {
  const args = ['run', job, '--wait', '--json', ...(opts.withWorker ? ['--with-worker'] : [])];
  if (opts.source !== undefined) args.push('--source', opts.source);
  const r = await runCli(args, env, opts.timeoutMs);
  const line = r.stdout.trim().split('\n').pop() ?? '';
  let summary: RunSummary;
  try {
    summary = JSON.parse(line) as RunSummary;
  } catch (err) {
    throw new BenchError(
      `crm-sync run ${job} printed no summary (exit ${r.code}): ${r.stderr.slice(-2000)}`,
      {
        cause: err,
      },
    );
  }
  if (summary.status !== 'completed')
    throw new BenchError(
      `run ${summary.runId} ended ${summary.status}: ${summary.error ?? r.stderr.slice(-2000)}`,
    );
  return { ...summary, wallMs: r.ms, cpuS: r.cpuS };
}

/** A `crm-sync worker` process, stopped with SIGTERM by its pid. */
export interface WorkerProcess {
  child: ChildProcess;
  /** CPU seconds used so far (the last reading once it has exited). */
  cpuSeconds(): number;
  /** Of them, its main thread's (read together). */
  mainThreadCpuSeconds(): number;
  stop(): Promise<void>;
}

export function startWorker(env: NodeJS.ProcessEnv): WorkerProcess {
  // BENCH_WORKER_LOG=DIR keeps each worker's log lines (LOG_LEVEL=info) there, as worker-<pid>.log.
  const logs = process.env.BENCH_WORKER_LOG;
  const child = spawn(process.execPath, [...nodeFlags(), CLI, 'worker'], {
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  if (logs && child.stderr) {
    mkdirSync(logs, { recursive: true });
    child.stderr.pipe(createWriteStream(join(logs, `worker-${child.pid}.log`)));
  }
  let stderr = '';
  child.stderr?.on('data', (b: Buffer) => (stderr = (stderr + b.toString()).slice(-4000)));
  const cpu = watchCpu(child);
  child.once('exit', () => cpu.stop());
  return {
    child,
    cpuSeconds: () => cpu.last(),
    mainThreadCpuSeconds: () => cpu.lastMain(),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) {
        if (child.exitCode) throw new BenchError(`worker exited ${child.exitCode}: ${stderr}`);
        return;
      }
      await new Promise<void>((resolve) => {
        const kill = setTimeout(() => child.kill('SIGKILL'), 15_000);
        child.once('exit', () => {
          clearTimeout(kill);
          resolve();
        });
        child.kill('SIGTERM');
      });
    },
  };
}
