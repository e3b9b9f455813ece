/**
 * Issue 14.3: the soak. A private redis-server, the sandbox, one
 * `crm-sync scheduler` and two `crm-sync worker` processes (the built CLI).
 * A small job (BENCH_SOAK_SMALL_ROWS companies, default 20) is scheduled
 * every second, so its runs follow each other back to back; after each run
 * ends, a few of its rows change. Beside it, a big job (BENCH_SOAK_BIG_ROWS,
 * default 20,000) is synced once before the soak and re-run nightly-style
 * (`crm-sync run big --wait`) a few times during it, each time with another
 * 1% of its rows changed.
 *
 * After every small run: Redis `used_memory`, `DBSIZE` and each worker's
 * RSS (VmRSS). The growth from the mean of the first 50 runs to the mean of
 * the last 50 must be bounded by the retention settings, not grow with the
 * number of runs: the run history is set small (CRM_SYNC_RUN_HISTORY) so the
 * soak goes well past its cap. The keys are also counted by family at both
 * ends, so a family that grows is named.
 *
 * BENCH_SOAK_RUNS: small runs (default 500); BENCH_SOAK_BIG_ROWS: the big
 * export (default 20,000); BENCH_SOAK_BIG_RERUNS: nightly re-runs during the
 * soak (default 4); BENCH_SOAK_HISTORY: runs kept per job (default 50).
 */
import { createWriteStream, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { Redis } from 'ioredis';
import { stringify } from 'yaml';
import { StateStore } from '../../src/state/store.js';
import type { RunRecord } from '../../src/state/runs.js';
import type { BenchTable, Scenario } from '../run.js';
import { COLUMNS, OUT_DIR, companyRow, csvCell } from '../crm-data.js';
import {
  CLI,
  BenchError,
  cliEnv,
  jobsDir,
  openBenchRedis,
  requireBuild,
  startWorker,
  syncRun,
  type WorkerProcess,
} from '../lib/cli.js';
import { int, loadAverage, ratio, seconds, sleep } from '../lib/measure.js';
import { BENCH_API_KEY, startMeteredSandbox } from '../lib/meter.js';

const RUNS = Number(process.env.BENCH_SOAK_RUNS ?? 500);
const BIG_ROWS = Number(process.env.BENCH_SOAK_BIG_ROWS ?? 20_000);
const BIG_RERUNS = Number(process.env.BENCH_SOAK_BIG_RERUNS ?? 4);
const SMALL_ROWS = Number(process.env.BENCH_SOAK_SMALL_ROWS ?? 20);
const HISTORY = Number(process.env.BENCH_SOAK_HISTORY ?? 50);
/** Runs averaged at each end. */
const WINDOW = Math.min(50, Math.max(1, Math.floor(RUNS / 4)));
const RATE = 1_000;
/** The small job's rows are numbered apart from the big job's. */
const SMALL_BASE = 10_000_000;
/** A small run that takes longer than this stops the soak. */
const STALL_MS = 180_000;

interface Sample {
  run: number;
  usedMemory: number;
  keys: number;
  /** Slot claims of the scheduler (SET PX, 10 minutes): bounded by time, not by runs. */
  claims: number;
  rss: number[];
}

async function countMatching(redis: Redis, pattern: string): Promise<number> {
  let n = 0;
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 5000);
    cursor = next;
    n += keys.length;
  } while (cursor !== '0');
  return n;
}

/** Writes `rows` companies from row `base`, rows with `changed(i)` renamed `(rev tag)`; atomically. */
async function writeExport(
  path: string,
  base: number,
  rows: number,
  changed: (i: number) => boolean,
  tag: string,
): Promise<void> {
  const tmp = `${path}.tmp`;
  const out = createWriteStream(tmp);
  const write = async (s: string): Promise<void> => {
    if (!out.write(s)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
  };
  await write(`${COLUMNS.map((c) => csvCell(c)).join(',')}\n`);
  for (let i = 0; i < rows; i++) {
    const cells = companyRow(base + i);
    if (changed(i)) cells[1] = `${cells[1]} (rev ${tag})`;
    await write(`${cells.map((v) => csvCell(v)).join(',')}\n`);
  }
  await new Promise<void>((resolve, reject) =>
    out.end((err?: Error | null) => (err ? reject(err) : resolve())),
  );
  renameSync(tmp, path);
}

/** Resident set size of a live process in bytes (VmRSS), NaN when gone. */
function rssOf(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}

async function usedMemory(redis: Redis): Promise<number> {
  const info = await redis.info('memory');
  return Number(/used_memory:(\d+)/.exec(info)?.[1]);
}

/** Keys by family: the key with its run ids, slots and numbers replaced by `<…>`. */
function familyOf(key: string, prefix: string): string {
  return key
    .replace(prefix, 'P')
    .replace(/run-\d{8}T\d{6}Z-[0-9a-f]+[^:]*/g, '<run>')
    .replace(/:\d{4}-\d\d-\d\dT[\d:.]+Z/g, ':<slot>')
    .replace(/\d+/g, '<n>');
}

interface KeyCensus {
  /** Keys per family. */
  families: Map<string, number>;
  /** MEMORY USAGE per family (bytes, summed over its keys). */
  bytes: Map<string, number>;
  /** Entries of each key alone in its family (a list, set, hash, sorted set or stream). */
  lengths: Map<string, number>;
}

async function census(redis: Redis, prefix: string): Promise<KeyCensus> {
  const families = new Map<string, number>();
  const bytes = new Map<string, number>();
  const single = new Map<string, string>();
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'COUNT', 2000);
    cursor = next;
    const p = redis.pipeline();
    for (const key of keys) p.memory('USAGE', key);
    const usage = (await p.exec()) ?? [];
    keys.forEach((key, i) => {
      const family = familyOf(key, prefix);
      families.set(family, (families.get(family) ?? 0) + 1);
      bytes.set(family, (bytes.get(family) ?? 0) + Number(usage[i]?.[1] ?? 0));
      single.set(family, key);
    });
  } while (cursor !== '0');
  const lengths = new Map<string, number>();
  for (const [family, n] of families) {
    if (n !== 1) continue;
    const key = single.get(family)!;
    const type = await redis.type(key);
    const len =
      type === 'zset'
        ? await redis.zcard(key)
        : type === 'hash'
          ? await redis.hlen(key)
          : type === 'list'
            ? await redis.llen(key)
            : type === 'set'
              ? await redis.scard(key)
              : type === 'stream'
                ? await redis.xlen(key)
                : undefined;
    if (len !== undefined) lengths.set(family, len);
  }
  return { families, bytes, lengths };
}

/** Rows `[name, before, after, change]` of the entries of `a` and `b` that differ. */
function changed(a: Map<string, number>, b: Map<string, number>): (string | number)[][] {
  return [...new Set([...a.keys(), ...b.keys()])]
    .map((f) => [f, a.get(f) ?? 0, b.get(f) ?? 0] as const)
    .filter(([, x, y]) => x !== y)
    .sort((x, y) => Math.abs(y[2] - y[1]) - Math.abs(x[2] - x[1]))
    .map(([f, x, y]) => [`\`${f}\``, int(x), int(y), `${y >= x ? '+' : ''}${int(y - x)}`]);
}

function mean(xs: readonly number[]): number {
  return xs.reduce((s, x) => s + x, 0) / xs.length;
}

function mib(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(2)} MiB`;
}

/** A `crm-sync scheduler` process, stopped with SIGTERM by its pid. */
function startScheduler(env: NodeJS.ProcessEnv): { stop(): Promise<void>; stderr(): string } {
  const child = spawn(process.execPath, [CLI, 'scheduler'], {
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (b: Buffer) => (stderr = (stderr + b.toString()).slice(-4000)));
  return {
    stderr: () => stderr,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
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

const ENDED = new Set(['completed', 'failed', 'stopped']);

const scenario: Scenario = {
  name: 'soak',
  description: `${RUNS} scheduled runs of a ${SMALL_ROWS}-row job and ${BIG_RERUNS} nightly re-runs of a ${BIG_ROWS.toLocaleString('en-US')}-row job, one scheduler and two workers, run history kept at ${HISTORY} per job`,
  async run(): Promise<BenchTable[]> {
    requireBuild();
    mkdirSync(OUT_DIR, { recursive: true });
    const load0 = await loadAverage();
    const redisBench = await openBenchRedis();
    const prefix = redisBench.prefix('soak');
    const sandbox = await startMeteredSandbox({ rateLimit: RATE });
    const jobs = jobsDir();
    const smallPath = join(OUT_DIR, `soak-small-${process.pid}.csv`);
    const bigPath = join(OUT_DIR, `soak-big-${BIG_ROWS}-${process.pid}.csv`);
    const thresholds = { maxChangeShare: 1 };
    const job = (path: string, schedule?: string): string =>
      stringify({
        entity: 'companies',
        source: { path },
        mapping: 'hubspot-companies',
        thresholds,
        ...(schedule !== undefined && { schedule }),
      });
    writeFileSync(join(jobs.dir, 'small.yaml'), job(smallPath, '* * * * * *'));
    writeFileSync(join(jobs.dir, 'big.yaml'), job(bigPath));
    await writeExport(smallPath, SMALL_BASE, SMALL_ROWS, () => false, '0');
    await writeExport(bigPath, 0, BIG_ROWS, () => false, '0');

    const env = cliEnv({
      redisUrl: redisBench.url,
      prefix,
      baseUrl: sandbox.url,
      apiKey: BENCH_API_KEY,
      rateLimit: RATE,
      jobs: jobs.dir,
      extra: { CRM_SYNC_RUN_HISTORY: String(HISTORY) },
    });
    const redis = new Redis(redisBench.url, { maxRetriesPerRequest: 3 });
    const store = new StateStore(redis, { prefix });
    const workers: WorkerProcess[] = [startWorker(env), startWorker(env)];
    let scheduler: ReturnType<typeof startScheduler> | undefined;
    const samples: Sample[] = [];
    const bigRuns: { at: number; ms: number; updated: number; unchanged: number }[] = [];
    let census0: KeyCensus = { families: new Map(), bytes: new Map(), lengths: new Map() };
    let censusEnd: KeyCensus = census0;
    let bytesPerRecord = NaN;
    /** After the first big sync: MEMORY USAGE per record of the record state and of the listing. */
    let perRecord = { state: NaN, index: NaN, queues: NaN };
    const t0 = performance.now();
    try {
      const before = await usedMemory(redis);
      const first = await syncRun('big', env, { withWorker: false, timeoutMs: 600_000 });
      if (first.counts.created !== BIG_ROWS)
        throw new BenchError(`first big sync created ${first.counts.created} of ${BIG_ROWS}`);
      bytesPerRecord = ((await usedMemory(redis)) - before) / BIG_ROWS;
      const synced = await census(redis, prefix);
      const sum = (test: (family: string) => boolean): number =>
        [...synced.bytes].filter(([f]) => test(f)).reduce((x, [, b]) => x + b, 0) / BIG_ROWS;
      perRecord = {
        state: sum((f) => /^P:companies:(id|rec):<n>$/.test(f)),
        index: sum((f) => f.startsWith('P:companies:ix')),
        queues: sum((f) => /^P:(platform-writes|sync-runs|alerts)(:|$)/.test(f)),
      };

      scheduler = startScheduler(env);
      const seen = new Set<string>();
      const rerunAt = new Set(
        Array.from({ length: BIG_RERUNS }, (_, k) =>
          Math.floor(((k + 1) * RUNS) / (BIG_RERUNS + 1)),
        ),
      );
      let bigRunning: Promise<void> | undefined;
      let lastEnd = performance.now();
      while (samples.length < RUNS) {
        const runs: RunRecord[] = await store.runs.list({ job: 'small', limit: 5 });
        const ended = runs.filter((r) => ENDED.has(r.status) && !seen.has(r.id)).reverse();
        for (const r of ended) {
          seen.add(r.id);
          if (r.status !== 'completed')
            throw new BenchError(`small run ${r.id} ended ${r.status}: ${r.error ?? ''}`);
          const n = samples.length + 1;
          // Four rows in twenty change before the next run.
          await writeExport(smallPath, SMALL_BASE, SMALL_ROWS, (i) => (i + n) % 5 === 0, String(n));
          samples.push({
            run: n,
            usedMemory: await usedMemory(redis),
            keys: await redis.dbsize(),
            claims: await countMatching(redis, `${prefix}:schedule:claim:*`),
            rss: workers.map((w) => rssOf(w.child.pid)),
          });
          lastEnd = performance.now();
          if (n % 50 === 0)
            process.stderr.write(
              `soak: run ${n}/${RUNS}, ${mib(samples[n - 1]!.usedMemory)}, ${int(samples[n - 1]!.keys)} keys\n`,
            );
          if (n === WINDOW) census0 = await census(redis, prefix);
          if (rerunAt.has(n) && bigRunning === undefined) {
            const k = bigRuns.length + 1;
            // Another 1% of the big job's rows each time (rows i with i % 100 == k).
            await writeExport(bigPath, 0, BIG_ROWS, (i) => i % 100 === k, String(k));
            bigRunning = syncRun('big', env, { withWorker: false, timeoutMs: 600_000 }).then(
              (s) => {
                bigRuns.push({
                  at: n,
                  ms: s.wallMs,
                  updated: s.counts.updated,
                  unchanged: s.counts.unchanged,
                });
                bigRunning = undefined;
              },
            );
          }
        }
        if (performance.now() - lastEnd > STALL_MS)
          throw new BenchError(
            `no small run ended for ${STALL_MS / 1000} s after run ${samples.length}: ${scheduler.stderr()}`,
          );
        await sleep(100);
      }
      await bigRunning;
      censusEnd = await census(redis, prefix);
    } finally {
      await scheduler?.stop();
      await Promise.all(workers.map((w) => w.stop()));
      redis.disconnect();
      await sandbox.close();
      jobs.remove();
      await redisBench.close();
    }
    const wallMs = performance.now() - t0;
    const load1 = await loadAverage();

    const head = samples.slice(0, WINDOW);
    // A window at 60% of the soak: past the caps that fill within it, the rest stays flat.
    const midAt = Math.max(0, Math.floor(samples.length * 0.6) - WINDOW);
    const mid = samples.slice(midAt, midAt + WINDOW);
    const tail = samples.slice(-WINDOW);
    const row = (name: string, of: (s: Sample) => number, fmt: (x: number) => string) => {
      const [a, m, b] = [head, mid, tail].map((w) => mean(w.map(of))) as [number, number, number];
      return [name, fmt(a), fmt(m), fmt(b), ratio(b / a, 3), ratio(b / m, 3)];
    };
    const rows = [
      row('Redis used_memory', (s) => s.usedMemory, mib),
      row('Redis keys (DBSIZE)', (s) => s.keys, int),
      row('  of which schedule slot claims (10 min TTL)', (s) => s.claims, int),
      row('Redis keys without slot claims', (s) => s.keys - s.claims, int),
      ...workers.map((_, w) => row(`worker ${w + 1} RSS`, (s) => s.rss[w]!, mib)),
    ];
    const familyRows = changed(census0.families, censusEnd.families);
    const lengthRows = changed(census0.lengths, censusEnd.lengths);
    const total = (m: Map<string, number>): number => [...m.values()].reduce((x, y) => x + y, 0);
    const bytesRows = changed(census0.bytes, censusEnd.bytes).filter(
      (r) => Math.abs(Number(String(r[3]).replace(/[+,]/g, ''))) >= 1024,
    );
    bytesRows.push([
      'all keys',
      int(total(census0.bytes)),
      int(total(censusEnd.bytes)),
      int(total(censusEnd.bytes) - total(census0.bytes)),
    ]);
    // Growth per run from the 60% window to the last: a plateau is about 0.
    const slope = (of: (s: Sample) => number): number =>
      (mean(tail.map(of)) - mean(mid.map(of))) / Math.max(1, tail[0]!.run - mid[0]!.run);
    return [
      {
        title: `Soak: first ${WINDOW} vs last ${WINDOW} of ${samples.length} runs of the ${SMALL_ROWS}-row job (means)`,
        columns: [
          'measure',
          `runs 1–${WINDOW}`,
          `runs ${mid[0]?.run}–${mid[mid.length - 1]?.run}`,
          `runs ${tail[0]?.run}–${tail[tail.length - 1]?.run}`,
          'last / first',
          `last / runs ${mid[0]?.run}–${mid[mid.length - 1]?.run}`,
        ],
        rows,
        notes: [
          `Run history kept: CRM_SYNC_RUN_HISTORY=${HISTORY} runs per job; the soak makes ${samples.length} runs of one job, ${(samples.length / HISTORY).toFixed(0)}x the cap.`,
          `Slope from runs ${mid[0]?.run}–${mid[mid.length - 1]?.run} to the last ${WINDOW}: ${int(slope((s) => s.usedMemory))} bytes of used_memory and ${ratio(
            slope((s) => s.keys - s.claims),
            2,
          )} keys (slot claims apart) per run.`,
          `Big job: its first sync of ${int(BIG_ROWS)} rows took Redis used_memory up by ${int(bytesPerRecord)} bytes per record; by MEMORY USAGE, the record state is ${int(perRecord.state)} bytes per record, the platform listing kept ${int(perRecord.index)}, and the queues' retained jobs and events ${int(perRecord.queues)} (a fixed amount, spread over the rows).`,
          `Big re-runs (after small run: wall, updated, unchanged): ${bigRuns.map((b) => `${b.at}: ${seconds(b.ms)}, ${b.updated}, ${b.unchanged}`).join('; ') || 'none'}.`,
          `Wall time ${seconds(wallMs)}; load average (1 min) before → after: ${load0} → ${load1}, on 2 shared cores.`,
        ],
      },
      {
        title: `Keys by family that differ between run ${WINDOW} and the end`,
        columns: ['family', `after run ${WINDOW}`, 'at the end', 'change'],
        rows: familyRows.length > 0 ? familyRows : [['(none)', '', '', '']],
      },
      {
        title: `Bytes by family (MEMORY USAGE) that differ by 1 KiB or more between run ${WINDOW} and the end`,
        columns: ['family', `after run ${WINDOW}`, 'at the end', 'change'],
        rows: bytesRows,
      },
      {
        title: `Entries of single keys (lists, sorted sets, hashes, streams) that differ between run ${WINDOW} and the end`,
        columns: ['key', `after run ${WINDOW}`, 'at the end', 'change'],
        rows: lengthRows.length > 0 ? lengthRows : [['(none)', '', '', '']],
      },
    ];
  },
};

export default scenario;
