/**
 * The whole sync engine in one test process: a sandbox on port 0, a config
 * on the harness Redis under a random `{…}` prefix (or the test's own), a
 * temporary folder for job files and exports written by the test, the worker service in-process
 * (short locks and polls), and `runJob`, which starts a run with the same
 * `startRun` as `crm-sync run` and waits for its end (`waitForRun`). `close()` stops everything and
 * deletes every key of the prefix.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach } from 'vitest';
import { stringify } from 'yaml';
import { ALERT_QUEUE } from '../../src/alerts/delivery.js';
import { openProducer, type Producer } from '../../src/cli/runtime.js';
import { loadConfig, type Config } from '../../src/config.js';
import { salesforceChecksum } from '../../src/crm/salesforce-id.js';
import type { EngineSettings } from '../../src/engine/context.js';
import { jobLoader, startRun } from '../../src/engine/run-service.js';
import { waitForRun } from '../../src/engine/run-summary.js';
import { startWorkerService, type WorkerService } from '../../src/engine/worker-service.js';
import type { JobDefinition } from '../../src/jobs/definition.js';
import { createLogger, silentLogger, type Logger } from '../../src/log.js';
import { createShutdown, type Shutdown } from '../../src/ops/shutdown.js';
import { PlatformClient } from '../../src/platform/client.js';
import { QueueName } from '../../src/queue/queues.js';
import {
  startSandbox,
  type Sandbox,
  type RequestEntry,
  type SandboxOptions,
  type StatsEntry,
} from '@crm-sync/platform-sandbox';
import type { FailureRow, RunRecord } from '../../src/state/runs.js';
import type { StateStore } from '../../src/state/store.js';
import type { Mode } from '../../src/sync/action.js';
import { deleteByPrefix, keysMatching, prefixPattern, randomPrefix, redisUrl } from './redis.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
export const API_KEY = 'engine-test-key';

export interface EngineOptions {
  /** The key prefix (CRM_SYNC_PREFIX), with its `{…}` hash tag; a random one unless given. */
  prefix?: string;
  /** Sandbox options beside the API key (faults, page size, extensions, seed). */
  sandbox?: Omit<SandboxOptions, 'apiKey' | 'port'>;
  /** Extra environment for `loadConfig` (e.g. PLATFORM_RATE_LIMIT, WRITE_CONCURRENCY). */
  env?: Record<string, string>;
  /** Engine settings (batch size, poll interval, …). */
  settings?: Partial<EngineSettings>;
  /** The API key the worker sends (default: the sandbox's own key). */
  apiKey?: string;
  /** Start the sandbox only; call `startWorkers()` later (e.g. after creating an API account). */
  deferWorkers?: boolean;
  /** Where the engine logs (a test reading its lines); silent (or ENGINE_TEST_LOG) otherwise. */
  logger?: Logger;
}

export interface RunOptions {
  source?: string;
  full?: boolean;
  force?: boolean;
  mode?: Mode;
  /** How long to wait for a terminal status (default 45 s). */
  timeoutMs?: number;
  /** Called every poll while the run goes, with its record. */
  onPoll?: (run: RunRecord) => void | Promise<void>;
}

export type Dump = {
  companies: Record<string, unknown>[];
  members: Record<string, unknown>[];
} & Record<string, unknown>;

export interface EngineHarness {
  sandbox: Sandbox;
  config: Config;
  prefix: string;
  dir: string;
  jobsDir: string;
  /** The producer side, as `crm-sync run` opens it: state store and runs queue. */
  producer: Producer;
  store: StateStore;
  logger: Logger;
  service: WorkerService | undefined;
  /** Starts the worker service (once), with the API key given or the one in options. */
  startWorkers(apiKey?: string): Promise<WorkerService>;
  /** Stops the worker service (so that nothing but the test touches Redis). */
  stopWorkers(): Promise<void>;
  /** Writes `jobs/<name>.yaml` from an object; returns the loaded definition. */
  writeJob(name: string, job: Record<string, unknown>): JobDefinition;
  /** Writes a CSV (header + rows, quoted where needed) into the temp folder; returns its path. */
  writeCsv(
    file: string,
    header: readonly string[],
    rows: readonly (readonly unknown[])[],
    opts?: { delimiter?: string },
  ): string;
  /** Starts a run as `crm-sync run` does and waits for its terminal status. */
  runJob(name: string, opts?: RunOptions): Promise<RunRecord>;
  /** Starts a run as `crm-sync run` does (or attaches to the one going); returns the run id. */
  enqueue(name: string, opts?: Omit<RunOptions, 'timeoutMs' | 'onPoll'>): Promise<string>;
  waitForRun(runId: string, opts?: Pick<RunOptions, 'timeoutMs' | 'onPoll'>): Promise<RunRecord>;
  failures(runId: string): Promise<FailureRow[]>;
  /** A platform client on the sandbox with its key (for setup and adoption tests). */
  client(apiKey?: string): PlatformClient;
  stats(): Promise<StatsEntry[]>;
  /** The sandbox's latest requests one by one, each with the time it arrived. */
  requests(): Promise<RequestEntry[]>;
  dump(): Promise<Dump>;
  /** Every Redis key under the prefix, sorted. */
  keys(): Promise<string[]>;
  /**
   * Every key of sync state under the prefix with its serialized value
   * (Redis DUMP), to prove a dry run changed nothing. The BullMQ queues' own
   * keys (runs, writes, alerts) are left out: their stalled-check markers expire on their own.
   */
  stateSnapshot(): Promise<Map<string, string>>;
  /** Every value stored under the prefix (keys, fields, members, entries), as one text. */
  redisText(): Promise<string>;
  close(): Promise<void>;
}

export async function startEngine(opts: EngineOptions = {}): Promise<EngineHarness> {
  const prefix = opts.prefix ?? randomPrefix();
  const dir = mkdtempSync(join(tmpdir(), 'crm-sync-engine-'));
  const jobsDir = join(dir, 'jobs');
  mkdirSync(jobsDir);
  const logger =
    opts.logger ??
    (process.env.ENGINE_TEST_LOG
      ? createLogger({ level: process.env.ENGINE_TEST_LOG })
      : silentLogger);
  const sandbox = await startSandbox({ apiKey: API_KEY, port: 0, ...opts.sandbox });
  const env = (apiKey: string): Record<string, string> => ({
    REDIS_URL: redisUrl(),
    CRM_SYNC_PREFIX: prefix,
    PLATFORM_BASE_URL: sandbox.url,
    PLATFORM_API_KEY: apiKey,
    PLATFORM_RATE_LIMIT: '500',
    PLATFORM_TIMEOUT_MS: '5000',
    WORKER_LOCK_MS: '5000',
    WRITE_BACKOFF_MS: '20',
    CRM_SYNC_JOBS_DIR: jobsDir,
    CRM_SYNC_MAPPINGS_DIR: join(ROOT, 'config', 'mappings'),
    LOG_LEVEL: 'silent',
    ...opts.env,
  });
  let config = loadConfig(env(opts.apiKey ?? API_KEY));
  const producer = await openProducer(config);
  let shutdown: Shutdown | undefined;
  const clients: PlatformClient[] = [];

  const h: EngineHarness = {
    sandbox,
    get config() {
      return config;
    },
    prefix,
    dir,
    jobsDir,
    producer,
    store: producer.store,
    logger,
    service: undefined,
    async startWorkers(apiKey) {
      if (h.service) return h.service;
      if (apiKey !== undefined) config = loadConfig(env(apiKey));
      shutdown = createShutdown(logger, { deadlineMs: 5_000 });
      h.service = await startWorkerService({
        config,
        logger,
        shutdown,
        jobsDir,
        settings: { pollMs: 50, ...opts.settings },
      });
      return h.service;
    },
    async stopWorkers() {
      await shutdown?.shutdown('workers stopped by the test');
      shutdown = undefined;
      h.service = undefined;
    },
    writeJob(name, job) {
      writeFileSync(join(jobsDir, `${name}.yaml`), stringify(job));
      return jobLoader(config, jobsDir)(name);
    },
    writeCsv(file, header, rows, o = {}) {
      const path = join(dir, file);
      const lines = [header, ...rows].map((r) => r.map(csvField).join(o.delimiter ?? ','));
      writeFileSync(path, `${lines.join('\n')}\n`);
      return path;
    },
    async enqueue(name, o = {}) {
      const deps = { ...producer, loadJob: jobLoader(config, jobsDir) };
      const { runId } = await startRun(deps, name, {
        ...(o.source !== undefined && { source: o.source }),
        full: o.full === true,
        force: o.force === true,
        ...(o.mode !== undefined && { mode: o.mode }),
      });
      return runId;
    },
    async waitForRun(runId, o = {}) {
      const run = await waitForRun(producer.store, runId, {
        pollMs: 25,
        timeoutMs: o.timeoutMs ?? 45_000,
        ...(o.onPoll && { onPoll: o.onPoll }),
      });
      if (!run) throw new Error(`no run ${runId}`);
      return run;
    },
    async runJob(name, o = {}) {
      await h.startWorkers();
      const runId = await h.enqueue(name, o);
      return h.waitForRun(runId, o);
    },
    failures: (runId) => producer.store.runs.listFailures(runId, { limit: 100_000 }),
    client(apiKey = API_KEY) {
      const c = new PlatformClient({ baseUrl: sandbox.url, apiKey, timeoutMs: 5_000 });
      clients.push(c);
      return c;
    },
    async stats() {
      const res = await fetch(`${sandbox.url}/__sandbox/stats`);
      return ((await res.json()) as { requests: StatsEntry[] }).requests;
    },
    async requests() {
      const res = await fetch(`${sandbox.url}/__sandbox/requests`);
      return ((await res.json()) as { requests: RequestEntry[] }).requests;
    },
    async dump() {
      const res = await fetch(`${sandbox.url}/__sandbox/dump`);
      return (await res.json()) as Dump;
    },
    keys: () => keysMatching(producer.redis, prefixPattern(prefix)),
    async stateSnapshot() {
      const queues = [QueueName.runs, QueueName.writes, ALERT_QUEUE].map((q) => `${prefix}:${q}:`);
      const keys = (await h.keys()).filter((k) => !queues.some((q) => k.startsWith(q)));
      const values = await Promise.all(keys.map((k) => producer.redis.dumpBuffer(k)));
      return new Map(keys.map((k, n) => [k, values[n]?.toString('hex') ?? '(gone)']));
    },
    async redisText() {
      const r = producer.redis;
      const parts: string[] = [];
      for (const key of await h.keys()) {
        parts.push(key);
        const type = await r.type(key);
        if (type === 'string') parts.push((await r.get(key)) ?? '');
        else if (type === 'hash') parts.push(...Object.entries(await r.hgetall(key)).flat());
        else if (type === 'list') parts.push(...(await r.lrange(key, 0, -1)));
        else if (type === 'set') parts.push(...(await r.smembers(key)));
        else if (type === 'zset') parts.push(...(await r.zrange(key, '0', '-1')));
        else if (type === 'stream')
          for (const [id, fields] of await r.xrange(key, '-', '+')) parts.push(id, ...fields);
      }
      return parts.join('\n');
    },
    async close() {
      await shutdown?.shutdown('test finished');
      for (const c of clients) c.close();
      await deleteByPrefix(producer.redis, prefix);
      await producer.close();
      await sandbox.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  if (!opts.deferWorkers) await h.startWorkers();
  return h;
}

/**
 * A fresh engine for one test, closed after it: `const h = await engine(opts)`
 * inside the test body.
 */
export function useEngines(): (opts?: EngineOptions) => Promise<EngineHarness> {
  const open: EngineHarness[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((h) => h.close()));
  });
  return async (opts) => {
    const h = await startEngine(opts);
    open.push(h);
    return h;
  };
}

// ---- reading the sandbox --------------------------------------------------------

/** Requests in the stats matching method, route and (optionally) status. */
export function countRequests(
  stats: readonly StatsEntry[],
  method: string,
  route: string,
  status?: number,
): number {
  return stats
    .filter(
      (e) =>
        e.method === method && e.route === route && (status === undefined || e.status === status),
    )
    .reduce((n, e) => n + e.count, 0);
}

/** Every POST and PUT the platform received, whatever the outcome. */
export function countWrites(stats: readonly StatsEntry[]): number {
  return stats
    .filter((e) => e.method === 'POST' || e.method === 'PUT' || e.method === 'PATCH')
    .reduce((n, e) => n + e.count, 0);
}

/** The difference of two stats snapshots (requests served between them). */
export function statsSince(
  before: readonly StatsEntry[],
  after: readonly StatsEntry[],
): StatsEntry[] {
  const key = (e: StatsEntry): string => `${e.method} ${e.status} ${e.route}`;
  const was = new Map(before.map((e) => [key(e), e.count]));
  return after
    .map((e) => ({ ...e, count: e.count - (was.get(key(e)) ?? 0) }))
    .filter((e) => e.count > 0);
}

// ---- generating exports -----------------------------------------------------------

/** The columns of a HubSpot companies UI export (those the preset reads). */
export const HUBSPOT_HEADER = [
  'Record ID',
  'Company name',
  'Company Domain Name',
  'Industry',
  'Number of Employees',
  'City',
  'Country/Region',
] as const;

export interface CompanyRow {
  id: number;
  name: string;
  domain: string;
  industry: string;
  employees: number;
  city: string;
  country: string;
}

/** `n` distinct companies, ids counting from `firstId`. */
export function companyRows(n: number, firstId = 5_000_001): CompanyRow[] {
  const industries = ['RETAIL', 'MANUFACTURING', 'FINANCIAL_SERVICES', 'SOFTWARE'];
  const places: [string, string][] = [
    ['Berlin', 'Germany'],
    ['Austin', 'United States'],
    ['Lyon', 'France'],
    ['Osaka', 'Japan'],
  ];
  return Array.from({ length: n }, (_, i) => {
    const [city, country] = places[i % places.length]!;
    return {
      id: firstId + i,
      name: `Company ${i} GmbH`,
      domain: `company-${i}.example`,
      industry: industries[i % industries.length]!,
      employees: 10 + i,
      city,
      country,
    };
  });
}

export function hubspotCells(r: CompanyRow): unknown[] {
  return [r.id, r.name, r.domain, r.industry, r.employees, r.city, r.country];
}

/** The body the hubspot-companies preset maps a row to (what the platform should hold). */
export function expectedCompany(r: CompanyRow): Record<string, unknown> {
  return {
    crm_company_id: r.id,
    external_id: `hubspot:company:${r.id}`,
    name: r.name,
    website: `https://${r.domain}`,
    custom: JSON.stringify({
      industry: r.industry,
      employees: r.employees,
      city: r.city,
      country: r.country,
    }),
  };
}

/** A job definition for the hubspot-companies preset reading `path`. */
export function hubspotJob(
  path: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return { entity: 'companies', source: { path }, mapping: 'hubspot-companies', ...extra };
}

/** The columns of a Salesforce User export (those the preset reads). */
export const SALESFORCE_USER_HEADER = ['Id', 'Email', 'FirstName', 'LastName', 'Title'] as const;

export interface MemberRow {
  id: string;
  email: string;
  first: string;
  last: string;
  title: string;
}

/** `n` distinct Salesforce users with valid 18-character ids. */
export function memberRows(n: number, first = 1): MemberRow[] {
  return Array.from({ length: n }, (_, i) => {
    const id15 = `0055g00000${String(first + i).padStart(5, '0')}`;
    return {
      id: id15 + salesforceChecksum(id15),
      email: `user${first + i}@acme.example`,
      first: `First${first + i}`,
      last: `Last${first + i}`,
      title: i % 2 === 0 ? 'Engineer' : 'Manager',
    };
  });
}

export function salesforceUserCells(r: MemberRow): unknown[] {
  return [r.id, r.email, r.first, r.last, r.title];
}

/** The body the salesforce-users preset maps a row to. */
export function expectedMember(r: MemberRow): Record<string, unknown> {
  return {
    external_id: `salesforce:${r.id}`,
    email: r.email.toLowerCase(),
    first_name: r.first,
    last_name: r.last,
    custom: JSON.stringify({ title: r.title }),
  };
}

function csvField(v: unknown): string {
  const s = v === undefined || v === null ? '' : String(v);
  return /[",;\n\r]/.test(s) || s !== s.trim() ? `"${s.replace(/"/g, '""')}"` : s;
}

/**
 * A small accounts export's inline mapping: a skip rule, an identity, a
 * required field and an optional one (the row outcomes, API and console
 * tests read exports of `ACCOUNTS_HEADER` with it).
 */
export const ACCOUNTS_MAPPING = {
  name: 'accounts',
  version: 1,
  entity: 'companies',
  skip: {
    deleted: {
      from: 'IsDeleted',
      transforms: ['boolean'],
      equals: true,
      reason: 'deleted in the CRM (IsDeleted {value})',
    },
  },
  fields: {
    external_id: { template: 'test:{Id}', required: true },
    name: { from: 'Name', transforms: ['trim'], required: true },
    website: { from: 'Website', transforms: ['website'] },
  },
};

export const ACCOUNTS_HEADER = ['Id', 'Name', 'Website', 'IsDeleted'];
