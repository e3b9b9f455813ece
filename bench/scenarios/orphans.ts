/**
 * The orphan report at a run's end (`RecordStates.orphans`, finalize of a
 * full-snapshot source): it reads every record of the entity, other jobs'
 * too. On a private redis-server, BENCH_ORPHAN_RECORDS (default 1,000,000)
 * company records written by one job; then, interleaved, three scans each
 * for a job with none of them (no orphans) and for that job (every record
 * an orphan), reading as the release does (`release`: ORPHAN_SCAN_BUCKETS
 * first, then about ORPHAN_SCAN_RECORDS records a round trip) or a fixed
 * number of record buckets per round trip: BENCH_ORPHAN_BUCKETS (default
 * `release,256,32`). Figures: wall
 * time, this process's CPU, and the longest the event loop was held (a 1 ms
 * timer's worst delay, `monitorEventLoopDelay`): in a worker, that is how
 * late the other runs' paced writes go out. Medians of 3.
 */
import { Redis } from 'ioredis';
import type { BenchTable, Scenario } from '../run.js';
import { ORPHAN_SCAN_RECORDS, type OrphanScan } from '../../src/state/records.js';
import { StateStore } from '../../src/state/store.js';
import { contentHash } from '../../src/sync/hash.js';
import { identityKeys } from '../../src/sync/identity.js';
import { int, median, stepCost } from '../lib/measure.js';
import { removeDir, startRedisServer } from '../../test/harness/redis-server.js';

const RECORDS = Number(process.env.BENCH_ORPHAN_RECORDS ?? 1_000_000);
const SIZES = (process.env.BENCH_ORPHAN_BUCKETS ?? 'release,256,32').split(',');
const PASSES = 3;

async function commitRecords(store: StateStore): Promise<void> {
  for (let start = 0; start < RECORDS; start += 1000) {
    const entries = [];
    for (let n = start; n < Math.min(RECORDS, start + 1000); n++) {
      const body = { external_id: `ACME-${n}`, crm_company_id: 20_000_000_000 + n };
      entries.push({
        keys: identityKeys('companies', body),
        platformId: 1_000_000 + n,
        hash: contentHash(body, 'fp'),
        runId: 'bench-run-0001',
        job: 'big',
      });
    }
    await store.records.commit('companies', entries);
  }
}

interface Scan {
  wallMs: number;
  cpuMs: number;
  heldMs: number;
  orphans: number;
}

async function scan(store: StateStore, job: string, run: string, size: string): Promise<Scan> {
  const how: OrphanScan = size === 'release' ? {} : { buckets: Number(size) };
  const { value: orphans, ...cost } = await stepCost(async () => {
    let n = 0;
    for await (const batch of store.records.orphans('companies', { id: run, job }, how))
      n += batch.length;
    return n;
  });
  return { ...cost, orphans };
}

const scenario: Scenario = {
  name: 'orphans',
  description: `the orphan report over ${int(RECORDS)} records, by buckets per round trip`,
  async run(): Promise<BenchTable[]> {
    const server = await startRedisServer();
    const redis = new Redis(server.url, { maxRetriesPerRequest: null });
    const store = new StateStore(redis);
    const cases = SIZES.flatMap((size) =>
      [
        { job: 'other', run: 'bench-run-0002', expect: 0 },
        { job: 'big', run: 'bench-run-0003', expect: RECORDS },
      ].map((c) => ({ ...c, size, scans: [] as Scan[] })),
    );
    try {
      await commitRecords(store);
      for (let pass = 0; pass < PASSES; pass++) {
        for (const c of cases) {
          const s = await scan(store, c.job, c.run, c.size);
          if (s.orphans !== c.expect)
            throw new Error(`job ${c.job}: ${s.orphans} orphans, not ${c.expect}`);
          c.scans.push(s);
        }
      }
    } finally {
      await redis.quit();
      await server.stop();
      removeDir(server.dir);
    }
    return [
      {
        title: `The orphan report over ${int(RECORDS)} company records (medians of ${PASSES})`,
        columns: [
          'buckets per round trip',
          'the job',
          'orphans',
          'wall ms',
          'CPU ms',
          'event loop held, longest ms (each scan)',
        ],
        rows: cases.map((c) => [
          c.size === 'release'
            ? `the release's (about ${int(ORPHAN_SCAN_RECORDS)} records)`
            : c.size,
          c.job === 'big' ? 'wrote them all' : 'wrote none',
          int(c.expect),
          Math.round(median(c.scans.map((s) => s.wallMs))),
          Math.round(median(c.scans.map((s) => s.cpuMs))),
          `${Math.round(median(c.scans.map((s) => s.heldMs)))} (${c.scans.map((s) => Math.round(s.heldMs)).join(', ')})`,
        ]),
        notes: [
          '4096 record buckets; one job wrote every record; the scans take turns',
          'CPU: this process (the worker side), not redis-server',
        ],
      },
    ];
  },
};

export default scenario;
