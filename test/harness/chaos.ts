/**
 * The chaos suite's world: a redis-server of its own with AOF (fsync always,
 * so a restart keeps the queues) or a cluster or Sentinel group the test
 * started (`ChaosOptions.redis`), the sandbox in this process (so faults can
 * change while a run goes), a job folder with a generated HubSpot companies
 * export, and crm-sync worker processes (`node dist/cli.js worker`) that can
 * be SIGKILLed for real. Runs are enqueued with `crm-sync run`; their records,
 * failures and the platform's state are read directly and checked against
 * the expected records of the export, worked out apart from src/ (the CSV
 * parsed with csv-parse, its columns mapped to platform fields here).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { Redis } from 'ioredis';
import { afterEach, expect } from 'vitest';
import { parse } from 'csv-parse/sync';
import { hasEnded } from '../../src/engine/run-summary.js';
import { startSandbox, type Sandbox, type SandboxOptions } from '@crm-sync/platform-sandbox';
import type { RedisClient } from '../../src/redis/connection.js';
import { RUN_OUTCOMES, type RunRecord } from '../../src/state/runs.js';
import { StateStore } from '../../src/state/store.js';
import {
  cliEnv,
  companiesJob,
  runCli,
  spawnCli,
  tempDir,
  type CliProcess,
  type TempDir,
} from './cli.js';
import { csvField, requireBuild, waitUntil } from './cli.js';
import { countWrites, statsSince, HUBSPOT_HEADER } from './engine.js';
import { writerKey } from '../../src/queue/writer-lease.js';
import { randomPrefix } from './redis.js';
import { removeDir, startRedisServer, type RedisServer } from './redis-server.js';

export const CHAOS_JOB = 'chaos';

/** The sandbox's seeded PRNG (mulberry32): the same seed gives the same kill moments. */
export { seededRandom } from '@crm-sync/platform-sandbox';

/**
 * A HubSpot companies export of `rows` rows, some invalid on purpose (missing
 * name, an e-mail address as website, a Record ID that is not a number, an
 * employee count that is not a number), some with quotes, commas and
 * non-ASCII text so that every field is worth checking.
 */
export function chaosCsv(rows: number): string {
  const industries = ['RETAIL', 'SOFTWARE', 'FINANCIAL_SERVICES', ''];
  const places: [string, string][] = [
    ['Berlin', 'Germany'],
    ['São Paulo', 'Brazil'],
    ['Austin, TX', 'United States'],
    ['Osaka', 'Japan'],
  ];
  const lines = [HUBSPOT_HEADER.join(',')];
  for (let i = 0; i < rows; i++) {
    const [city, country] = places[i % places.length]!;
    let id = String(7_000_001 + i);
    let name = i % 7 === 3 ? `"Quoted" Company ${i}, Ltd.` : `Company ${i} Größe`;
    let domain = `company-${i}.example`;
    let employees = String(5 + (i % 500));
    if (i % 97 === 13) name = '';
    if (i % 89 === 7) domain = `sales@company-${i}.example`;
    if (i % 113 === 5) id = `R-${i}`;
    if (i % 131 === 9) employees = 'many';
    const cells = [id, name, domain, industries[i % industries.length]!, employees, city, country];
    lines.push(cells.map(csvField).join(','));
  }
  return `${lines.join('\n')}\n`;
}

export interface Expected {
  rows: number;
  /** external_id → the record the platform must hold (`custom` parsed). */
  valid: Map<string, Record<string, unknown>>;
  /** line → `field: reason`, for every row the mapping refuses. */
  invalid: Map<number, string>;
  /** `line field` of every optional field left out of a valid row, with its reason. */
  warnings: Map<string, string>;
}

/**
 * What the `hubspot-companies` preset must make of `chaosCsv`, worked out
 * here apart from src/: the file parsed with csv-parse, each column mapped
 * to its platform field by hand. The export has no line break inside a
 * cell, so row n (from 0) is on line n + 2.
 */
export function expectedOf(csv: string): Expected {
  const records = parse(csv, { columns: true, bom: true }) as Record<string, string>[];
  const valid = new Map<string, Record<string, unknown>>();
  const invalid = new Map<number, string>();
  const warnings = new Map<string, string>();
  records.forEach((r, n) => {
    const line = n + 2;
    const id = r['Record ID']!;
    const name = r['Company name']!.trim();
    if (!/^\d+$/.test(id)) return invalid.set(line, 'crm_company_id: not a number');
    if (name === '')
      return invalid.set(line, 'name: missing: no value in columns Company name, properties.name');
    const domain = r['Company Domain Name']!;
    let website: string | null = `https://${domain}`;
    if (domain.includes('@')) {
      website = null;
      warnings.set(`${line} website`, 'an e-mail address, not a website');
    }
    const custom: Record<string, unknown> = {};
    if (r.Industry !== '') custom.industry = r.Industry;
    const employees = r['Number of Employees']!;
    if (/^\d+$/.test(employees)) custom.employees = Number(employees);
    else warnings.set(`${line} custom.employees`, 'not a number');
    custom.city = r.City;
    custom.country = r['Country/Region'];
    const externalId = `hubspot:company:${id}`;
    valid.set(externalId, {
      crm_company_id: Number(id),
      external_id: externalId,
      name,
      website,
      custom,
    });
  });
  return { rows: records.length, valid, invalid, warnings };
}

/**
 * A Redis the test started itself (a cluster, a Sentinel group; see
 * redis-topology.ts) in place of the world's private single server. The test
 * stops it; the world only connects to it.
 */
export interface ChaosRedis {
  /** What points worker and CLI processes at it (REDIS_CLUSTER_NODES, REDIS_SENTINELS…). */
  env: Record<string, string>;
  /** A connection of the test's own that finds Redis again after a failover. */
  connect(): RedisClient;
}

export interface ChaosOptions {
  rows?: number;
  /** Another Redis than a private single server with AOF. */
  redis?: ChaosRedis;
  sandbox?: Omit<SandboxOptions, 'apiKey' | 'port'>;
  /** Extra environment of every worker and CLI process. */
  env?: Record<string, string | number>;
}

export interface Chaos {
  /** The private single server, unless the options named another Redis. */
  redisServer: RedisServer | undefined;
  sandbox: Sandbox;
  apiKey: string;
  /** A connection of the test's own (reconnects after a Redis restart). */
  redis: RedisClient;
  /** The key prefix of the world's processes (a `{…}` hash tag: one cluster slot). */
  prefix: string;
  store: StateStore;
  files: TempDir;
  expected: Expected;
  /** The environment of worker and CLI processes; `env(key)` with another API key. */
  env(apiKey?: string): NodeJS.ProcessEnv;
  workers: CliProcess[];
  /** Starts a worker process and waits until it serves. */
  startWorker(apiKey?: string): Promise<CliProcess>;
  /** SIGKILLs the worker at `index` (of those running) and waits for it to die. */
  killWorker(index: number): Promise<void>;
  /** The index of the worker holding the writer lease (src/queue/writer-lease.ts), waiting for one. */
  writerIndex(): Promise<number>;
  /**
   * Freezes the worker at `index` (SIGSTOP), as a long GC pause or a starved
   * CPU would, until `resumeWhen` holds, then lets it go on (SIGCONT).
   */
  pauseWorker(index: number, resumeWhen: () => Promise<boolean>): Promise<void>;
  /** Stops Redis (SIGTERM, or SIGKILL with `hard`), waits `downMs`, starts it again. */
  restartRedis(opts?: { hard?: boolean; downMs?: number }): Promise<void>;
  /** `crm-sync run chaos --json`; returns the run id. */
  enqueue(args?: string[]): Promise<string>;
  /** Polls the run record (tolerating a Redis outage) until it ends. */
  waitForRun(
    runId: string,
    opts?: { timeoutMs?: number; onPoll?: (run: RunRecord) => void | Promise<void> },
  ): Promise<RunRecord>;
  close(): Promise<void>;
}

/**
 * For a chaos test file: registers the cleanup and returns `startChaos`,
 * which first checks that the CLI is built. Every world it starts is closed
 * after each test.
 */
export function useChaos(): (opts?: ChaosOptions) => Promise<Chaos> {
  const open: Chaos[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((c) => c.close()));
  });
  return async (opts) => {
    requireBuild();
    const c = await startChaos(opts);
    open.push(c);
    return c;
  };
}

export async function startChaos(opts: ChaosOptions = {}): Promise<Chaos> {
  const rows = opts.rows ?? 2_000;
  const apiKey = `chaos-key-${randomPrefix().slice(16, 28)}`;
  const files = tempDir('chaos');
  const csv = chaosCsv(rows);
  const exportPath = files.write('chaos.csv', csv);
  writeFileSync(files.path(`${CHAOS_JOB}.yaml`), companiesJob(exportPath));
  const expected = expectedOf(csv);
  const redisServer = opts.redis ? undefined : await startRedisServer({ appendonly: true });
  const sandbox = await startSandbox({ apiKey, port: 0, ...opts.sandbox });
  const prefix = randomPrefix();
  const redis = opts.redis?.connect() ?? ownConnection(redisServer!.url);
  const store = new StateStore(redis, { prefix });

  const env = (key = apiKey): NodeJS.ProcessEnv =>
    cliEnv({
      ...(opts.redis?.env ?? { REDIS_URL: redisServer!.url }),
      CRM_SYNC_PREFIX: prefix,
      CRM_SYNC_JOBS_DIR: files.dir,
      PLATFORM_BASE_URL: sandbox.url,
      PLATFORM_API_KEY: key,
      PLATFORM_RATE_LIMIT: 400,
      PLATFORM_TIMEOUT_MS: 5_000,
      OPS_PORT: 0,
      WORKER_LOCK_MS: 2_500,
      WRITE_BACKOFF_MS: 100,
      SHUTDOWN_TIMEOUT_MS: 3_000,
      LOG_LEVEL: 'info',
      ...opts.env,
    });

  const everyWorker: CliProcess[] = [];
  const c: Chaos = {
    redisServer,
    sandbox,
    apiKey,
    redis,
    prefix,
    store,
    files,
    expected,
    env,
    workers: [],
    async startWorker(key) {
      const w = spawnCli(['worker'], env(key));
      everyWorker.push(w);
      c.workers.push(w);
      void w.exited.then(() => {
        const at = c.workers.indexOf(w);
        if (at >= 0) c.workers.splice(at, 1);
      });
      await w.waitForLine(/"msg":"ops server listening"/, { timeoutMs: 30_000 });
      return w;
    },
    async killWorker(index) {
      const w = c.workers[index];
      if (!w) throw new Error(`no worker ${index} (${c.workers.length} running)`);
      w.kill('SIGKILL');
      expect((await w.exited).signal).toBe('SIGKILL');
    },
    async writerIndex() {
      let at = -1;
      await waitUntil(
        async () => {
          // The lease holds `host:pid:random`.
          const pid = /:(\d+):[0-9a-f]+$/.exec((await redis.get(writerKey(prefix))) ?? '')?.[1];
          at = c.workers.findIndex((w) => String(w.child.pid) === pid);
          return at >= 0;
        },
        'a running worker holding the writer lease',
        10_000,
      );
      return at;
    },
    async pauseWorker(index, resumeWhen) {
      const w = c.workers[index];
      if (!w) throw new Error(`no worker ${index} (${c.workers.length} running)`);
      w.kill('SIGSTOP');
      try {
        const until = Date.now() + 60_000;
        while (!(await resumeWhen())) {
          if (Date.now() > until) throw new Error('the paused worker was never to be resumed');
          await sleep(50);
        }
      } finally {
        w.kill('SIGCONT');
      }
    },
    async restartRedis(o = {}) {
      if (!redisServer) throw new Error('restartRedis: this world has no private Redis server');
      await redisServer.stop(o.hard);
      await sleep(o.downMs ?? 1_000);
      await redisServer.start();
    },
    async enqueue(args = []) {
      const r = await runCli(['run', CHAOS_JOB, '--json', ...args], env(), 60_000);
      expect(r.code, r.stderr).toBe(0);
      return (JSON.parse(r.stdout) as { runId: string }).runId;
    },
    async waitForRun(runId, o = {}) {
      const timeoutMs = o.timeoutMs ?? 120_000;
      const deadline = Date.now() + timeoutMs;
      let last: RunRecord | undefined;
      for (;;) {
        last = (await store.runs.get(runId).catch(() => undefined)) ?? last;
        if (last && hasEnded(last)) return last;
        if (last) await o.onPoll?.(last);
        if (Date.now() > deadline) {
          throw new Error(
            `run ${runId} still ${last?.status ?? 'missing'} (${last?.phase ?? ''}) after ${timeoutMs} ms: ${JSON.stringify(last?.counts)}`,
          );
        }
        await sleep(50);
      }
    },
    async close() {
      // CHAOS_LOGS=DIR keeps every worker's log lines there, to read after a failure.
      const logs = process.env.CHAOS_LOGS;
      if (logs) {
        const dir = join(logs, basename(files.dir));
        mkdirSync(dir, { recursive: true });
        for (const [n, w] of [...everyWorker].entries())
          writeFileSync(join(dir, `worker-${n}.log`), w.stderr.join('\n'));
        const dump = await fetch(`${sandbox.url}/__sandbox/dump`).then((r) => r.text());
        writeFileSync(join(dir, 'sandbox-dump.json'), dump);
      }
      await Promise.all(
        c.workers.map(async (w) => {
          w.kill('SIGKILL');
          await w.exited;
        }),
      );
      redis.disconnect();
      await sandbox.close();
      if (redisServer) {
        await redisServer.stop(true);
        removeDir(redisServer.dir);
      }
      files.remove();
    },
  };
  return c;
}

/** A connection that retries forever: the test's reads must outlive a Redis restart. */
function ownConnection(url: string): Redis {
  const redis = new Redis(url, { maxRetriesPerRequest: null });
  redis.on('error', () => {});
  return redis;
}

/**
 * The checks after a run that must have synced everything: completed, the
 * platform holds exactly the expected records (each once, every field as
 * mapped), every invalid row is in the run's failures with its reason, so
 * is every optional field left out (a warning), and every row read has
 * exactly one outcome.
 */
export async function expectSynced(c: Chaos, run: RunRecord): Promise<void> {
  expect(run.error, 'run error').toBeUndefined();
  expect(run.status).toBe('completed');
  const { valid, invalid, rows } = c.expected;

  const companies = (
    await fetchJson<{ companies: Record<string, unknown>[] }>(c, '/__sandbox/dump')
  ).companies;
  const seen = new Map<string, number>();
  for (const co of companies) {
    const id = String(co.external_id);
    seen.set(id, (seen.get(id) ?? 0) + 1);
  }
  const duplicated = [...seen].filter(([, n]) => n > 1).map(([id]) => id);
  expect(duplicated, 'records created more than once').toEqual([]);
  const missing = [...valid.keys()].filter((id) => !seen.has(id));
  expect(missing, 'valid rows not on the platform').toEqual([]);
  const unexpected = [...seen.keys()].filter((id) => !valid.has(id));
  expect(unexpected, 'records on the platform that no valid row maps to').toEqual([]);
  const wrong = companies.flatMap((co) => {
    const want = valid.get(String(co.external_id))!;
    const got: Record<string, unknown> = Object.fromEntries(
      Object.keys(want).map((k) => [k, co[k]]),
    );
    got.custom = typeof co.custom === 'string' ? JSON.parse(co.custom) : co.custom;
    return isDeepStrictEqual(got, want) ? [] : [{ got, want }];
  });
  expect(wrong.slice(0, 3), `${wrong.length} records with wrong fields`).toEqual([]);

  const failures = await c.store.runs.listFailures(run.id, { limit: 100_000 });
  const invalidFailures = new Map(
    failures.filter((f) => f.kind === 'invalid').map((f) => [f.line, `${f.field}: ${f.reason}`]),
  );
  expect(invalidFailures).toEqual(invalid);
  const warned = new Map(
    failures.filter((f) => f.kind === 'warning').map((f) => [`${f.line} ${f.field}`, f.reason]),
  );
  expect(warned).toEqual(c.expected.warnings);
  expect(failures.filter((f) => f.kind !== 'invalid' && f.kind !== 'warning')).toEqual([]);

  const k = run.counts;
  expect(k.read).toBe(rows);
  expect(k.invalid).toBe(invalid.size);
  expect(k.failed + k.rejected + k.conflict).toBe(0);
  const outcomes = RUN_OUTCOMES.reduce((n, o) => n + k[o], 0);
  expect(outcomes, `outcomes of ${JSON.stringify(k)}`).toBe(k.read);
}

/** A second run of the same export completes, with every record unchanged and no POST or PUT. */
export async function expectSecondRunWritesNothing(c: Chaos): Promise<void> {
  const before = await sandboxStats(c);
  const run = await c.waitForRun(await c.enqueue(), { timeoutMs: 60_000 });
  expect(run.status).toBe('completed');
  expect(run.counts).toMatchObject({
    read: c.expected.rows,
    unchanged: c.expected.valid.size,
    created: 0,
    updated: 0,
    adopted: 0,
    invalid: c.expected.invalid.size,
  });
  expect(countWrites(statsSince(before, await sandboxStats(c)))).toBe(0);
}

/**
 * Two workers write the world's sync and, once a third of the valid rows
 * are POSTed, `fault` runs (a Redis primary killed and its replica
 * promoted); then the run must complete with every row once, both workers
 * must have lived through it and logged the lost connection (`lost`), and a
 * second run must write nothing. Returns how long `fault` took.
 */
export async function expectSyncThroughRedisFault(
  c: Chaos,
  fault: () => Promise<void>,
  lost: RegExp,
): Promise<{ faultMs: number }> {
  await c.startWorker();
  await c.startWorker();
  const runId = await c.enqueue();
  let postsAtFault = -1;
  let faultMs = 0;
  const run = await c.waitForRun(runId, {
    timeoutMs: 90_000,
    onPoll: async () => {
      if (postsAtFault >= 0) return;
      const posts = requests(await sandboxStats(c), 'POST', '/companies');
      if (posts < c.expected.valid.size / 3) return;
      postsAtFault = posts;
      const started = Date.now();
      await fault();
      faultMs = Date.now() - started;
    },
  });
  expect(postsAtFault, 'posts when the fault began').toBeGreaterThan(0);
  expect(postsAtFault).toBeLessThan(c.expected.valid.size);
  expect(faultMs).toBeGreaterThan(0);
  expect(c.workers).toHaveLength(2);
  for (const w of c.workers) expect(w.stderr.some((l) => lost.test(l))).toBe(true);
  await expectSynced(c, run);
  await expectSecondRunWritesNothing(c);
  return { faultMs };
}

export interface StatsEntry {
  method: string;
  route: string;
  status: number;
  count: number;
}

export async function sandboxStats(c: Chaos): Promise<StatsEntry[]> {
  return (await fetchJson<{ requests: StatsEntry[] }>(c, '/__sandbox/stats')).requests;
}

/** Requests of `method` on `route` answered with `status` (any status when omitted). */
export function requests(
  stats: readonly StatsEntry[],
  method: string,
  route: string,
  status?: number,
): number {
  return stats
    .filter((e) => e.method === method && e.route === route)
    .filter((e) => status === undefined || e.status === status)
    .reduce((n, e) => n + e.count, 0);
}

async function fetchJson<T>(c: Chaos, path: string): Promise<T> {
  const res = await fetch(`${c.sandbox.url}${path}`);
  return (await res.json()) as T;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
