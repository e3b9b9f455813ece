/**
 * `crm-sync migrate`: brings the state under a prefix from an older layout to
 * this release's (LAYOUT_VERSION), one step per version, and refuses while
 * anything of the older release could still write it.
 *
 * In order:
 * 1. one migration at a time (a lock key, renewed while it runs);
 * 2. refused when the state's bucket counts are not the ones given (the steps
 *    would rewrite only part of it), while a worker of another release is
 *    connected to the queues (the caller lists them: BullMQ's worker list, by
 *    name), or while a run started by the older release has not ended (unless
 *    `abandonRuns`: then those still active are marked failed);
 * 3. the layout record is set to the new version with `migratingFrom`. A
 *    process checks the layout once: a pass is kept for its life, a refusal
 *    is not. So this release's processes refuse the state until step 5; a
 *    process of the older release that has not passed its check yet refuses
 *    it from now on, but one that passed before goes on as before: that is
 *    why workers of another release are refused (steps 2 and 4). Schedulers,
 *    API servers and CLI commands are not in the worker list and are not
 *    waited for: what those of the older release do meanwhile is in
 *    docs/STATE.md (Layout and upgrades);
 * 4. the workers are listed again (one that connected before step 3 may have
 *    checked the layout before it changed); then the steps run;
 * 5. `migratingFrom` is removed.
 *
 * Every step is idempotent, so a migration cut off anywhere is finished by
 * running it again. State already at this layout is left alone.
 */
import { randomBytes } from 'node:crypto';
import { callScript, defineScripts, queueScript } from '../redis/scripts.js';
import { redisCall, StateError } from './errors.js';
import { DEFAULT_BUCKETS, KeyLayout, LAYOUT_VERSION, RunField, type Buckets } from './keys.js';
import { LayoutField, layoutProblem, versionOf } from './layout.js';
import { migrateRecordJobs } from './migrate-record-jobs.js';
import { execAll } from './pipeline.js';
import type { StateStore } from './store.js';

type Connection = StateStore['connection'];

interface Step {
  to: number;
  what: string;
  run(redis: Connection, keys: KeyLayout, ctx: StepContext): Promise<Record<string, number>>;
}

interface StepContext {
  batch: number;
  onBatch: () => Promise<void>;
}

/** The steps, each from `to - 1` to `to`. */
const STEPS: readonly Step[] = [
  {
    to: 2,
    what: 'record states name the job that wrote them',
    run: async (redis, keys, ctx) => ({ ...(await migrateRecordJobs(redis, keys, ctx)) }),
  },
];

/** Connected workers of other releases, by name; `unknown` when Redis cannot list clients. */
export interface OtherWorkers {
  names: string[];
  unknown: boolean;
}

export interface MigrateOptions {
  prefix: string;
  buckets?: Buckets;
  /** The workers connected to the queues that are not of this layout. */
  otherWorkers: () => Promise<OtherWorkers>;
  /** Skip the worker check (Redis cannot list clients, and the operator stopped every worker). */
  workersStopped?: boolean;
  /** Mark runs started by the older release that have not ended as failed, instead of refusing. */
  abandonRuns?: boolean;
  /** Record buckets read per round trip (default 256). */
  batch?: number;
  now?: () => number;
}

export interface MigrateReport {
  /** `none`: no state under the prefix; `current`: already at this layout. */
  outcome: 'none' | 'current' | 'migrated';
  from: number | null;
  to: number;
  steps: { to: number; what: string; counts: Record<string, number> }[];
  abandonedRuns: string[];
}

/** Why a migration did not start (or stopped): the message says what to do. */
export class MigrationRefused extends Error {
  override readonly name = 'MigrationRefused';
}

const ACTIVE = ['planning', 'writing', 'finalizing'] as const;
const LOCK_MS = 60_000;

export async function migrate(redis: Connection, opts: MigrateOptions): Promise<MigrateReport> {
  const keys = new KeyLayout(opts.prefix, opts.buckets ?? DEFAULT_BUCKETS);
  const token = randomBytes(8).toString('hex');
  const lock = keys.migrationLock();
  const taken = await redisCall('taking the migration lock', () =>
    redis.set(lock, token, 'PX', LOCK_MS, 'NX'),
  );
  if (taken !== 'OK') {
    throw new MigrationRefused(`another crm-sync migrate is running on ${opts.prefix}`);
  }
  try {
    return await migrateLocked(redis, keys, opts, async () => {
      const renewed = await redisCall('renewing the migration lock', () =>
        callScript(redis, 'renew-lock', lock, token, LOCK_MS),
      );
      if (Number(renewed) !== 1) throw new MigrationRefused('the migration lock was lost');
    });
  } finally {
    await redisCall('releasing the migration lock', () =>
      callScript(redis, 'release-lock', lock, token),
    );
  }
}

async function migrateLocked(
  redis: Connection,
  keys: KeyLayout,
  opts: MigrateOptions,
  renew: () => Promise<void>,
): Promise<MigrateReport> {
  const meta = await readMeta(redis, keys);
  const base = { to: LAYOUT_VERSION, steps: [], abandonedRuns: [] };
  if (Object.keys(meta).length === 0) return { outcome: 'none', from: null, ...base };
  // A migration cut off is resumed; any other problem than an older layout is refused.
  const { [LayoutField.migratingFrom]: resuming, ...settled } = meta;
  const problem = layoutProblem(keys.prefix, settled, keys.buckets);
  if (problem?.code === 'state.layout-mismatch') {
    // The steps go through the buckets this migration was given: with other
    // counts than the state's they would rewrite only part of it.
    throw new MigrationRefused(
      `${problem.message}: nothing was changed; migrate it with the bucket counts it was made with`,
    );
  }
  if (problem && problem.code !== 'state.layout-old') throw problem;
  const from = resuming === undefined ? versionOf(meta) : Number(resuming);
  if (!problem && resuming === undefined) return { outcome: 'current', from, ...base };
  if (!Number.isInteger(from) || from < 1 || from > LAYOUT_VERSION) {
    throw new StateError('state.corrupt', `layout record names no version to migrate from`, false);
  }

  await refuseOtherWorkers(opts);
  const stale = await unfinishedRuns(redis, keys);
  if (stale.length > 0 && !opts.abandonRuns) {
    throw new MigrationRefused(
      `${stale.length} run(s) started by the older release have not ended (${stale.slice(0, 5).join(', ')}` +
        `${stale.length > 5 ? ', …' : ''}): let the older release's workers finish them, ` +
        'or run `crm-sync migrate --abandon-runs` to mark them failed (their unconfirmed creates ' +
        'stay pending until the next run lists the platform and settles them)',
    );
  }
  const abandonedRuns =
    stale.length > 0 ? await abandonRuns(redis, keys, stale, (opts.now ?? Date.now)()) : [];

  await redisCall('marking the migration', () =>
    redis.hset(keys.meta(), {
      [LayoutField.version]: String(LAYOUT_VERSION),
      [LayoutField.migratingFrom]: String(from),
    }),
  );
  await refuseOtherWorkers(opts);

  const steps: MigrateReport['steps'] = [];
  for (const step of STEPS.filter((s) => s.to > from && s.to <= LAYOUT_VERSION)) {
    const counts = await step.run(redis, keys, { batch: opts.batch ?? 256, onBatch: renew });
    steps.push({ to: step.to, what: step.what, counts });
  }
  await redisCall('ending the migration', () => redis.hdel(keys.meta(), LayoutField.migratingFrom));
  return { outcome: 'migrated', from, to: LAYOUT_VERSION, steps, abandonedRuns };
}

async function readMeta(redis: Connection, keys: KeyLayout): Promise<Record<string, string>> {
  return redisCall('reading the state layout', () => redis.hgetall(keys.meta()));
}

async function refuseOtherWorkers(opts: MigrateOptions): Promise<void> {
  if (opts.workersStopped) return;
  const others = await opts.otherWorkers();
  if (others.unknown) {
    throw new MigrationRefused(
      'this Redis does not list its clients, so running workers cannot be seen: stop every ' +
        'crm-sync worker, then run `crm-sync migrate --workers-stopped`',
    );
  }
  if (others.names.length > 0) {
    throw new MigrationRefused(
      `${others.names.length} worker connection(s) of another crm-sync release are connected ` +
        `(${others.names.slice(0, 5).join(', ')}): stop every worker of the older release, then ` +
        'run `crm-sync migrate` again',
    );
  }
}

/** Runs that have started and not ended and were not started by this layout. */
async function unfinishedRuns(redis: Connection, keys: KeyLayout): Promise<string[]> {
  const out: string[] = [];
  const page = 500;
  for (let start = 0; ; start += page) {
    const ids = await redisCall('listing runs', () =>
      redis.zrange(keys.runsAll(), String(start), String(start + page - 1)),
    );
    if (ids.length === 0) return out;
    const p = redis.pipeline();
    for (const id of ids) p.hmget(keys.run(id), 'status', RunField.layout);
    const rows = (await execAll(p, 'listing runs')) as (string | null)[][];
    ids.forEach((id, i) => {
      const [status, layout] = rows[i]!;
      if (
        status &&
        (ACTIVE as readonly string[]).includes(status) &&
        layout !== String(LAYOUT_VERSION)
      )
        out.push(id);
    });
  }
}

/**
 * Marks the runs failed, each only if it is still active (a compare-and-set,
 * lua/abandon-run-1.lua: a run that ended after it was listed keeps its end).
 * Returns those marked.
 */
export async function abandonRuns(
  redis: Connection,
  keys: KeyLayout,
  runs: readonly string[],
  at: number,
): Promise<string[]> {
  const error = `abandoned by crm-sync migrate (layout ${LAYOUT_VERSION}): it was started by an older release`;
  defineScripts(redis);
  const p = redis.pipeline();
  for (const id of runs) {
    queueScript(
      p,
      'abandon-run',
      keys.run(id),
      String(at),
      error,
      String(LAYOUT_VERSION),
      RunField.layout,
      ...ACTIVE,
    );
  }
  const done = await execAll(p, 'abandoning runs of the older release');
  return runs.filter((_, i) => Number(done[i]) === 1);
}
