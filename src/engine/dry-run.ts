/**
 * A dry run: the planning pass with every result kept in memory and nothing
 * written anywhere (no platform call but listing, no Redis write). It reads
 * the stored sync state and platform index; when the index is missing or
 * older than the job allows, it lists the platform into memory instead.
 */
import type { JobDefinition } from '../jobs/definition.js';
import type { Logger } from '../log.js';
import type { PlatformClient } from '../platform/client.js';
import { withRetry } from '../platform/retry.js';
import type { Action, Mode } from '../sync/action.js';
import { identityKeysOfPlatformRecord, type Entity } from '../sync/identity.js';
import type { Known } from '../sync/plan.js';
import { remoteValues } from '../sync/remote.js';
import type { StateStore } from '../state/store.js';
import type { Claim, ClaimConflict } from '../state/scratch.js';
import { DEFAULT_ENGINE_SETTINGS } from './context.js';
import type { RunJobRequest } from './payloads.js';
import { planExport, type PlanCounts, type PlanningSink } from './planning.js';
import { sourceOf } from './source.js';

export interface DryRunResult {
  counts: PlanCounts;
  /** The first `sample` actions of each kind but unchanged, with field diffs for updates. */
  actions: Action[];
  indexSource: 'stored' | 'listed';
}

export async function dryRun(opts: {
  def: JobDefinition;
  req: Pick<RunJobRequest, 'source' | 'full' | 'mode'>;
  store: StateStore;
  client: PlatformClient;
  logger: Logger;
  sample?: number;
}): Promise<DryRunResult> {
  const { def, store } = opts;
  const sample = opts.sample ?? 100;
  const index = await store.indexInfo(def.entity);
  const stale =
    !index || opts.req.full || Date.now() - index.refreshedAt > def.indexMaxAgeHours * 3_600_000;
  const listed = stale ? await listIntoMemory(opts.client, def.entity) : undefined;
  // A prefix never synced holds no state, and the store's first lookup records
  // its key layout (a write): a dry run on it reads nothing instead.
  const noState = (await store.redis.exists(store.keys.meta())) === 0;

  const claims = new MemoryClaims();
  const kept: Action[] = [];
  const perKind = new Map<string, number>();
  const sink: PlanningSink = {
    claim: async (entries) => claims.claim(entries),
    lookup: async (records) => {
      const known = noState
        ? records.map((): Known => ({}))
        : await store.lookup(def.entity, records);
      if (!listed) return known;
      return known.map((k, n) => matchListed(listed, records[n]!.keys, k));
    },
    accept: async (actions) => {
      for (const a of actions) {
        if (a.kind === 'unchanged') continue;
        const n = perKind.get(a.kind) ?? 0;
        if (n < sample) kept.push(a);
        perKind.set(a.kind, n + 1);
      }
    },
    withdraw: async (rows) => {
      for (const r of rows) kept.push(r.conflict);
    },
  };
  const counts = await planExport({
    entity: def.entity,
    mapping: def.mapping,
    source: sourceOf(def, opts.req),
    mode: (opts.req.mode ?? def.mode) as Mode,
    memberUpdates: def.membersUpdate === 'put',
    verifyRemote: opts.req.full === true,
    sink,
    logger: opts.logger,
  });
  return { counts, actions: kept, indexSource: listed ? 'listed' : 'stored' };
}

interface Listed {
  ids: Map<string, number>;
  remote: Map<number, Record<string, unknown>>;
}

async function listIntoMemory(client: PlatformClient, entity: Entity): Promise<Listed> {
  const listed: Listed = { ids: new Map(), remote: new Map() };
  // A transient fault costs that page again, as in a real run's listing; a dry run has no queue to wait in.
  const eachPage = <R>(get: () => Promise<R>): Promise<R> =>
    withRetry(get, { idempotent: true, retries: DEFAULT_ENGINE_SETTINGS.inProcessRetries });
  const records =
    entity === 'companies' ? client.companies({ eachPage }) : client.members({ eachPage });
  for await (const r of records) {
    if (typeof r.id !== 'number') continue;
    listed.remote.set(r.id, remoteValues(entity, r));
    for (const k of identityKeysOfPlatformRecord(entity, r))
      if (!listed.ids.has(k)) listed.ids.set(k, r.id);
  }
  return listed;
}

/**
 * What the listing just made says of a record: its platform id when our state
 * has none, and, either way, the platform's current values (a listing made now
 * is newer than any write we confirmed), so updates show their field diffs.
 */
function matchListed(listed: Listed, keys: readonly string[], known: Known): Known {
  const id = known.platformId ?? keys.map((k) => listed.ids.get(k)).find((v) => v !== undefined);
  if (id === undefined) return known;
  const remote = listed.remote.get(id);
  return remote ? { ...known, platformId: id, remote } : { ...known, platformId: id };
}

/** Identity claims of one export, in memory: the same answers as the Redis scratch gives. */
class MemoryClaims {
  private readonly holder = new Map<string, number>();
  private readonly conflicted = new Map<number, { identity: string; otherLines: number[] }>();

  claim(entries: readonly Claim[]): ClaimConflict[] {
    const batch = new Set(entries.map((e) => e.line));
    const touched = new Set<number>();
    const note = (line: number, identity: string, other: number): void => {
      const info = this.conflicted.get(line) ?? { identity, otherLines: [] };
      if (!info.otherLines.includes(other)) info.otherLines.push(other);
      this.conflicted.set(line, info);
      touched.add(line);
    };
    const newlyEarlier = new Set<number>();
    for (const e of entries) {
      for (const key of e.keys) {
        const h = this.holder.get(key);
        if (h === undefined) this.holder.set(key, e.line);
        else if (h !== e.line) {
          if (!batch.has(h) && !this.conflicted.has(h)) newlyEarlier.add(h);
          note(e.line, key, h);
          note(h, key, e.line);
        }
      }
    }
    const out: ClaimConflict[] = [];
    for (const e of entries) {
      const info = this.conflicted.get(e.line);
      if (info) out.push({ line: e.line, ...info, earlier: false });
    }
    for (const line of newlyEarlier)
      out.push({ line, ...this.conflicted.get(line)!, earlier: true });
    return out;
  }
}
