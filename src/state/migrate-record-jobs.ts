/**
 * Migration of layout 1 to 2: every record state names the job whose run
 * wrote it. Layout 1 stored `<hash>.<synced at>.<run number>` (three parts);
 * layout 2 adds `.<job number>` (see packing.ts). The job of a three-part
 * value is the job of its run: run number → run id (`runs:ids`) → the run
 * record's `job` → that job's number (`jobs:ids`, assigned here if new).
 * A value whose run record is gone (or never had a number) keeps its three
 * parts: its writer is unknown, and layout 2 reads it so, as layout 1 did.
 *
 * Only the record buckets are read, by their names (every key is known from
 * the bucket counts; no SCAN or KEYS over the keyspace), `batch` buckets per
 * round trip. Each value is replaced only if it is still the one read
 * (compare-and-set in Lua, lua/replace-record-states.lua), and four-part values are never touched: running
 * it again changes nothing.
 */
import { callScript } from '../redis/scripts.js';
import { ENTITIES } from '../sync/identity.js';
import { redisCall } from './errors.js';
import type { KeyLayout } from './keys.js';
import { Numbering } from './numbering.js';
import { packRecord, unpackRecord } from './packing.js';
import { chunks, execAll } from './pipeline.js';
import type { StateStore } from './store.js';

type Connection = StateStore['connection'];

export interface RecordJobsReport {
  /** Record states read. */
  records: number;
  /** Three-part values given their job's number. */
  rewritten: number;
  /** Three-part values kept: their run (and so their job) is no longer known. */
  writerUnknown: number;
}

interface Old {
  bucket: string;
  field: string;
  value: string;
  runNumber: number;
}

export async function migrateRecordJobs(
  redis: Connection,
  keys: KeyLayout,
  opts: { batch: number; onBatch?: () => Promise<void> },
): Promise<RecordJobsReport> {
  const report: RecordJobsReport = { records: 0, rewritten: 0, writerUnknown: 0 };
  const jobNumbers = new Numbering(redis, keys.jobIds(), 'job');
  const jobOfRun = new Map<number, string | undefined>();
  const buckets = Array.from({ length: keys.buckets.records }, (_, b) => b);
  for (const entity of ENTITIES) {
    for (const part of chunks(buckets, opts.batch)) {
      const names = part.map((b) => keys.recs(entity, b));
      const p = redis.pipeline();
      for (const name of names) p.hgetall(name);
      const hashes = (await execAll(p, 'reading record states')) as Record<string, string>[];
      const old: Old[] = [];
      hashes.forEach((h, i) => {
        for (const [field, value] of Object.entries(h)) {
          report.records++;
          const s = unpackRecord(value);
          if (s.jobNumber === undefined) {
            old.push({ bucket: names[i]!, field, value, runNumber: s.runNumber });
          }
        }
      });
      await learnJobs(redis, keys, old, jobOfRun);
      const quads: string[] = [];
      const used: string[] = [];
      for (const o of old) {
        const job = jobOfRun.get(o.runNumber);
        if (job === undefined) {
          report.writerUnknown++;
          continue;
        }
        const jobNumber = await jobNumbers.numberOf(job);
        let k = used.indexOf(o.bucket);
        if (k < 0) k = used.push(o.bucket) - 1;
        const value = packRecord({ ...unpackRecord(o.value), jobNumber });
        quads.push(String(k + 1), o.field, o.value, value);
      }
      if (quads.length > 0) {
        const n = await redisCall('rewriting record states', () =>
          callScript(redis, 'replace-record-states', used.length, ...used, ...quads),
        );
        report.rewritten += Number(n);
      }
      await opts.onBatch?.();
    }
  }
  return report;
}

/** Reads the job of each run number in `old` not yet in `jobOfRun` (two round trips). */
async function learnJobs(
  redis: Connection,
  keys: KeyLayout,
  old: readonly Old[],
  jobOfRun: Map<number, string | undefined>,
): Promise<void> {
  const runs = [...new Set(old.map((o) => o.runNumber))].filter((n) => !jobOfRun.has(n));
  if (runs.length === 0) return;
  const ids = await redisCall('reading run numbers', () =>
    redis.hmget(keys.runIds(), ...runs.map((n) => `s:${n}`)),
  );
  const known = runs.flatMap((n, i) => (ids[i] ? [[n, ids[i]] as const] : []));
  for (const n of runs) jobOfRun.set(n, undefined);
  if (known.length === 0) return;
  const p = redis.pipeline();
  for (const [, id] of known) p.hget(keys.run(id), 'job');
  const jobs = (await execAll(p, 'reading the jobs of runs')) as (string | null)[];
  known.forEach(([n], i) => jobOfRun.set(n, jobs[i] ?? undefined));
}
