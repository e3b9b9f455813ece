/**
 * Memory per synced record in Redis (identity map + record state; at
 * BENCH_STATE_RECORDS records of each entity), memory per record of the
 * platform index, lookup throughput, and the per-row cost of identity +
 * content hash (budget: 50,000 rows/s for the whole pipeline).
 * Runs against a private redis-server (never a shared one).
 */
import { Redis } from 'ioredis';
import type { BenchTable, Scenario, ShortForm } from '../run.js';
import { StateStore } from '../../src/state/store.js';
import { contentHash } from '../../src/sync/hash.js';
import { identityKeys, type Entity } from '../../src/sync/identity.js';
import { removeDir, startRedisServer } from '../../test/harness/redis-server.js';
import { firstSyncMemory, type FirstSyncMemory } from '../lib/first-sync-memory.js';
import { benchDuplicatesText } from '../lib/plan-pass.js';
import { redisCpuMs } from '../lib/measure.js';

const N = 100_000;
/**
 * Records of each entity committed for the record-state rows (BENCH_STATE_RECORDS,
 * default N): past about 1.4 million companies (three identity keys each) the
 * identity buckets, past about 2 million records the record buckets, outgrow
 * Redis' listpack limit. Lookups and the index stay at N.
 */
const RECORDS = Number(process.env.BENCH_STATE_RECORDS ?? N);
const BATCH = 1000;
/**
 * Rows of the first-sync case (BENCH_FIRST_SYNC_ROWS, default 100,000), and
 * its target: Redis bytes per planned row at peak. BENCH_DUPLICATES plans it
 * under a survivor rule (bench/lib/plan-pass.ts).
 */
const FIRST_SYNC_ROWS = Number(process.env.BENCH_FIRST_SYNC_ROWS || 100_000);
const FIRST_SYNC_TARGET = 200;

function sfId(n: number): string {
  // An 18-character Salesforce account id.
  return `0015g00000${n.toString(36).toUpperCase().padStart(5, '0')}AAA`;
}

function companyBody(n: number): Record<string, unknown> {
  return {
    external_id: `ACME-${String(n).padStart(6, '0')}`,
    crm_account_id: sfId(n),
    crm_company_id: 20_000_000_000 + n,
    name: `Company ${n} GmbH`,
    website: `https://company-${n}.example.com`,
    custom: `segment-${n % 7}`,
  };
}

function memberBody(n: number): Record<string, unknown> {
  return {
    external_id: `U-${String(n).padStart(7, '0')}`,
    email: `first.last${n}@company-${n % 5000}.example.com`,
    first_name: 'First',
    last_name: `Last${n}`,
    role: 'admin',
  };
}

async function usedMemory(redis: Redis): Promise<number> {
  const info = await redis.info('memory');
  const m = /used_memory:(\d+)/.exec(info);
  return Number(m?.[1]);
}

async function settle(redis: Redis): Promise<number> {
  // Lazy frees (UNLINK, expiry) happen in the background: let them finish.
  await new Promise((r) => setTimeout(r, 300));
  return usedMemory(redis);
}

async function encodings(redis: Redis, pattern: string): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 2000);
    cursor = next;
    if (keys.length === 0) continue;
    const p = redis.pipeline();
    for (const k of keys) p.object('ENCODING', k);
    for (const [, enc] of (await p.exec()) ?? [])
      counts[String(enc)] = (counts[String(enc)] ?? 0) + 1;
  } while (cursor !== '0');
  return counts;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

interface CommitMemory {
  keysPerRecord: number;
  bytesPerRecord: number;
  perSecond: number;
  encodings: Record<string, number>;
}

/** Commits `count` records of `entity` into `store`: Redis bytes per record (used_memory delta). */
async function commitMemory(
  redis: Redis,
  store: StateStore,
  entity: Entity,
  count: number,
): Promise<CommitMemory> {
  const body = entity === 'companies' ? companyBody : memberBody;
  const before = await settle(redis);
  const t0 = performance.now();
  let keyCount = 0;
  for (let start = 0; start < count; start += BATCH) {
    const entries = [];
    for (let n = start; n < start + BATCH; n++) {
      const b = body(n);
      const keys = identityKeys(entity, b);
      keyCount += keys.length;
      entries.push({
        keys,
        platformId: 1_000_000 + n,
        hash: contentHash(b, 'fp'),
        runId: 'bench-run-0001',
        job: 'bench',
      });
    }
    await store.records.commit(entity, entries);
  }
  const commitMs = performance.now() - t0;
  const after = await settle(redis);
  return {
    keysPerRecord: keyCount / count,
    bytesPerRecord: (after - before) / count,
    perSecond: count / (commitMs / 1000),
    encodings: await encodings(redis, `${store.keys.prefix}:${entity}:*`),
  };
}

async function stateMemory(
  redis: Redis,
  store: StateStore,
  entity: Entity,
): Promise<(string | number)[]> {
  const m = await commitMemory(redis, store, entity, RECORDS);
  return [
    entity,
    RECORDS.toLocaleString('en-US'),
    m.keysPerRecord.toFixed(1),
    m.bytesPerRecord.toFixed(1),
    Math.round(m.perSecond).toLocaleString('en-US'),
    Object.entries(m.encodings)
      .map(([e, c]) => `${e} ${c}`)
      .join(', '),
  ];
}

/** Records/s by the wall clock, and per CPU-second of the bench process and of redis-server. */
async function lookupRate(
  redis: Redis,
  store: StateStore,
  entity: Entity,
): Promise<(string | number)[]> {
  const body = entity === 'companies' ? companyBody : memberBody;
  const records = Array.from({ length: N }, (_, n) => ({ keys: identityKeys(entity, body(n)) }));
  const cpu0 = process.cpuUsage();
  const redis0 = await redisCpuMs(redis);
  const t0 = performance.now();
  let found = 0;
  for (let start = 0; start < N; start += 500) {
    const known = await store.records.lookup(entity, records.slice(start, start + 500));
    found += known.filter((k) => k.storedHash !== undefined).length;
  }
  const wall = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const redisCpu = ((await redisCpuMs(redis)) - redis0) / 1000;
  if (found !== N) throw new Error(`lookup found ${found} of ${N}`);
  const fmt = (x: number): string => Math.round(x).toLocaleString('en-US');
  return [entity, fmt(N / wall), fmt(N / ((cpu.user + cpu.system) / 1e6)), fmt(N / redisCpu)];
}

async function indexMemory(
  redis: Redis,
  store: StateStore,
  label: string,
): Promise<(string | number)[]> {
  const before = await settle(redis);
  const t0 = performance.now();
  async function* pages(): AsyncGenerator<Record<string, unknown>[]> {
    for (let start = 0; start < N; start += 100) {
      yield Array.from({ length: 100 }, (_, i) => ({
        id: 5_000_000 + start + i,
        ...companyBody(N + start + i),
        avatar: null,
        created_at: '2024-05-01T10:00:00Z',
        modified_at: '2024-05-02T10:00:00Z',
      }));
    }
  }
  const info = await store.index.replace('companies', pages());
  const ms = performance.now() - t0;
  const after = await settle(redis);
  const enc = await encodings(redis, `${store.keys.prefix}:companies:ix:*`);
  return [
    label,
    info.count.toLocaleString('en-US'),
    '3.0',
    ((after - before) / N).toFixed(1),
    Math.round(N / (ms / 1000)).toLocaleString('en-US'),
    Object.entries(enc)
      .map(([e, c]) => `${e} ${c}`)
      .join(', '),
  ];
}

function hashRates(): (string | number)[][] {
  const bodies = Array.from({ length: 20_000 }, (_, n) => companyBody(n));
  const measure = (fn: (b: Record<string, unknown>) => unknown): number => {
    const rates: number[] = [];
    for (let r = 0; r < 7; r++) {
      // CPU time, not wall time: the machine is shared, and this loop never waits.
      const c0 = process.cpuUsage();
      for (const b of bodies) fn(b);
      const c = process.cpuUsage(c0);
      rates.push(bodies.length / ((c.user + c.system) / 1e6));
    }
    return median(rates);
  };
  const hash = measure((b) => contentHash(b, 'mapping-fingerprint'));
  const both = measure((b) => [
    identityKeys('companies', b),
    contentHash(b, 'mapping-fingerprint'),
  ]);
  return [
    ['contentHash (6-field company)', Math.round(hash).toLocaleString('en-US')],
    ['identityKeys + contentHash', Math.round(both).toLocaleString('en-US')],
  ];
}

/** The first-sync rows: each moment's bytes over the empty server, per planned row and vs the target. */
function firstSyncRows(keep: FirstSyncMemory, freed: FirstSyncMemory): (string | number)[][] {
  const row = (moment: string, bytes: number, rows: number): (string | number)[] => [
    moment,
    `${(bytes / 1048576).toFixed(1)} MiB`,
    (bytes / rows).toFixed(0),
    (bytes / rows / FIRST_SYNC_TARGET).toFixed(2),
  ];
  const r = keep.rows;
  return [
    row('planning: used_memory_peak', keep.planningPeak, r),
    row('… of it, identity claims as planning ends (freed then)', keep.parts.claims, r),
    row('… of it, planned writes after planning', keep.parts.plan, r),
    row(`+ queue window (${keep.windowJobs} chunk jobs)`, keep.afterPlanning + keep.window, r),
    row('+ write phase, planned writes kept (chunks not named): peak', keep.peakAtEnd, r),
    row('… of it, planned writes kept at the end', keep.planAtEnd, r),
    row(
      '+ write phase, plan chunks freed as their lines settle: peak',
      freed.peakAtEnd,
      freed.rows,
    ),
    row('… used_memory at the end of the write phase', freed.withState, freed.rows),
    row('… of it, planned writes left at the end', freed.planAtEnd, freed.rows),
    row('… of it, settled lines (set)', freed.settledAtEnd, freed.rows),
  ];
}

/**
 * The check's short form: the first sync's peak (plan chunks freed as their
 * lines settle, as the write path does) and the record state of 100,000
 * companies, each on a private redis-server of its own.
 */
export const shortForm: ShortForm = {
  what: `a first sync of ${FIRST_SYNC_ROWS.toLocaleString('en-US')} companies; ${N.toLocaleString('en-US')} companies' record state`,
  async measure() {
    const freed = await firstSyncMemory(FIRST_SYNC_ROWS, true);
    const server = await startRedisServer();
    const redis = new Redis(server.url, { maxRetriesPerRequest: null });
    try {
      const companies = await commitMemory(redis, new StateStore(redis), 'companies', N);
      return {
        firstSyncPeakBytesPerRow: freed.peakAtEnd / freed.rows,
        companyStateBytesPerRecord: companies.bytesPerRecord,
      };
    } finally {
      await redis.quit();
      await server.stop();
      removeDir(server.dir);
    }
  },
};

const scenario: Scenario = {
  name: 'state-memory',
  description:
    'Redis memory per synced record, per indexed platform record and per planned row of a first sync; lookup and hash throughput',
  async run(): Promise<BenchTable[]> {
    // Checked here, not on import: every scenario module is imported, whichever runs.
    if (!Number.isInteger(RECORDS) || RECORDS < N || RECORDS % BATCH !== 0)
      throw new Error(
        `BENCH_STATE_RECORDS: ${process.env.BENCH_STATE_RECORDS} is not a multiple of ${BATCH} of at least ${N}`,
      );
    // Each on a server of its own, so that its peak is its own.
    const keep = await firstSyncMemory(FIRST_SYNC_ROWS, false);
    const freed = await firstSyncMemory(FIRST_SYNC_ROWS, true);
    const server = await startRedisServer();
    const redis = new Redis(server.url, { maxRetriesPerRequest: null });
    try {
      const store = new StateStore(redis);
      const rows = [
        await stateMemory(redis, store, 'companies'),
        await stateMemory(redis, store, 'members'),
      ];
      const lookups = [
        await lookupRate(redis, store, 'companies'),
        await lookupRate(redis, store, 'members'),
      ];
      rows.push(await indexMemory(redis, store, 'companies index'));
      // The same listing with a listpack value limit that fits a record's fields.
      await redis.config('SET', 'hash-max-listpack-value', '512');
      rows.push(
        await indexMemory(
          redis,
          new StateStore(redis, { prefix: '{crm-sync-512}' }),
          'companies index, listpack-value 512',
        ),
      );
      return [
        {
          title: `Redis memory per record (${RECORDS.toLocaleString('en-US')} synthetic records of each entity, an index of ${N.toLocaleString('en-US')}; INFO used_memory delta)`,
          columns: [
            'map',
            'records',
            'identity keys / record',
            'bytes / record',
            'written / s',
            'bucket encodings',
          ],
          rows,
          notes: [
            'state = identity map (every identity key → platform id) + record state (hash, synced at, run); target < 200 bytes',
            'index = identity map + the platform values of the request fields, as canonical JSON (values > 64 bytes leave listpack)',
            `redis ${(await redis.info('server')).match(/redis_version:(\S+)/)?.[1]}, hash-max-listpack-entries ${((await redis.config('GET', 'hash-max-listpack-entries')) as string[])[1]} / -value 64 (the server's defaults)`,
          ],
        },
        {
          title: `First sync of ${FIRST_SYNC_ROWS.toLocaleString('en-US')} companies: Redis over the empty server, per planned row (target ≤ ${FIRST_SYNC_TARGET} B)`,
          columns: ['moment', 'Redis', 'bytes / planned row', 'vs target'],
          rows: firstSyncRows(keep, freed),
          notes: [
            `Planning pass of the generated HubSpot export into empty state with the run's Redis sink (${keep.planned.toLocaleString('en-US')} planned creates, ${(keep.planMs / 1000).toFixed(1)} s, ${benchDuplicatesText()}), on a private redis-server ${keep.redisVersion} holding nothing else; baseline = used_memory of the empty server after CONFIG RESETSTAT; peak = INFO used_memory_peak.`,
            'Queue window: the chunk jobs the enqueuer keeps waiting at most (maxWaitingWrites / writeChunk) plus as many as the write queue retains completed (RETENTION.writes.completed.count), added as waiting jobs with the payload writeChunks builds.',
            "Write phase: every planned line then claimed and settled through the worker's Redis steps (plannedWrites.located, writes.claimAll, writes.finish with the record committed, platform ids made up), a chunk job's 50 lines at a time, the run's scratch, progress keys and the queue window still there; 'kept' settles without naming the plan chunks, so none is freed (the write path before it freed them).",
          ],
        },
        {
          title: 'Batched lookups (500 records per call, all matched)',
          columns: [
            'entity',
            'records / s (wall)',
            'records / bench CPU-s',
            'records / redis CPU-s',
          ],
          rows: lookups,
        },
        {
          title: 'Per-row pure cost (median of 7 passes over 20,000 rows)',
          columns: ['operation', 'rows / CPU-second'],
          rows: hashRates(),
        },
      ];
    } finally {
      await redis.quit();
      await server.stop();
      removeDir(server.dir);
    }
  },
};

export default scenario;
