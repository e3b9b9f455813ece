/**
 * The dry run of a job (`crm-sync plan`, `run --dry-run`, the API's plan):
 * what a run would create, update and refuse, with field diffs. The planning
 * pass with every result kept in memory and nothing written anywhere (no
 * platform call but listing, no Redis write). It reads the stored sync state
 * and platform index; when the index is missing or older than the job
 * allows, it lists the platform into memory instead. Its dependencies come in
 * `PlanDeps`, no process globals, so a server calls it as the CLI does.
 */
import type { CoverageSummary } from '../crm/path-coverage.js';
import type { SourceEnv } from '../crm/source.js';
import type { JobDefinition } from '../jobs/definition.js';
import type { Logger } from '../log.js';
import type { PlatformClient } from '../platform/client.js';
import { withRetry } from '../platform/with-retry.js';
import type { RetrySettings } from '../platform/retry-policy.js';
import type { Action, Mode } from '../sync/action.js';
import { MemoryClaims } from '../sync/claims.js';
import { MemorySurvivors } from '../sync/survivors.js';
import { identityKeysOfPlatformRecord, type Entity } from '../sync/identity.js';
import { strongestMatch } from '../sync/match.js';
import type { Known } from '../sync/plan.js';
import { remoteValues } from '../sync/remote.js';
import type { Listing } from '../state/record-lookup.js';
import type { StateStore } from '../state/store.js';
import type { RunJobRequest } from './payloads.js';
import { planExport, type PlanCounts, type PlanningSink, type RowWarning } from './plan-pass.js';
import type { JobLoader } from '../jobs/job-loader.js';
import { sourceEnvOf, sourceOf } from './run-source.js';
import type { RunSummary } from './run-summary.js';

export interface DryRunResult {
  counts: PlanCounts;
  /** The first `sample` actions of each kind but unchanged, with field diffs for updates. */
  actions: Action[];
  /** The first `sample` warnings: optional fields that would be left out of their row. */
  warnings: RowWarning[];
  indexSource: 'stored' | 'listed';
  /** Path coverage of the first rows, as a real run checks it before writing. */
  paths?: CoverageSummary;
}

export interface PlanDeps {
  /** Read only: a plan writes nothing to Redis. */
  store: StateStore;
  /** Lists the platform when the stored index is missing or stale; never writes. */
  client: PlatformClient;
  logger: Logger;
  loadJob: JobLoader;
  /** Where the source's credentials and `${NAME}` references are read (config's `sourceEnv`). */
  sourceEnv: SourceEnv;
}

export interface PlanRequest {
  /** Read this export (a path or URL) instead of the job's source. */
  source?: string;
  /** List the platform again instead of using the stored index. */
  full?: boolean;
  /** Overrides the job's mode. */
  mode?: Mode;
}

export interface PlanOptions {
  /**
   * Every action as it is planned, unchanged rows included (a row found later
   * to share an identity with another comes again as a `conflict`): for a
   * caller that streams the whole plan.
   */
  onActions?: (actions: readonly Action[]) => void | Promise<void>;
  /** How many actions of each kind the result keeps (default 100). */
  sample?: number;
}

/**
 * The plan of `job` (its name, or its definition already loaded) for
 * `request`: counts, a sample of actions and warnings, and the coverage of
 * the mapped paths in the first rows.
 */
export async function planJob(
  deps: PlanDeps,
  job: string | JobDefinition,
  request: PlanRequest = {},
  opts: PlanOptions = {},
): Promise<DryRunResult> {
  const def = typeof job === 'string' ? deps.loadJob(job) : job;
  return dryRun({
    def,
    req: {
      ...(request.source !== undefined && { source: request.source }),
      full: request.full === true,
      ...(request.mode !== undefined && { mode: request.mode }),
    },
    store: deps.store,
    client: deps.client,
    logger: deps.logger,
    env: deps.sourceEnv,
    ...(opts.sample !== undefined && { sample: opts.sample }),
    ...(opts.onActions && { onActions: opts.onActions }),
  });
}

/**
 * A plan's counts under the names of a run summary's outcomes (what `plan
 * --json` prints): `failed` is always 0 (nothing is sent, so nothing fails);
 * `skipped` counts rows a skip rule matched and rows withheld while an
 * earlier create of theirs is unverified.
 */
export type PlanOutcomes = Pick<
  RunSummary['counts'],
  | 'read'
  | 'created'
  | 'updated'
  | 'unchanged'
  | 'adopted'
  | 'invalid'
  | 'conflict'
  | 'duplicates'
  | 'failed'
  | 'skipped'
  | 'unsupported'
  | 'warnings'
>;

export function planOutcomes(c: PlanCounts): PlanOutcomes {
  return {
    read: c.read,
    created: c.create,
    updated: c.update,
    unchanged: c.unchanged,
    adopted: c.adopt,
    invalid: c.invalid,
    conflict: c.conflict,
    duplicates: c.duplicate,
    failed: 0,
    skipped: c.skip + c.pending,
    unsupported: c.unsupported,
    warnings: c.warnings,
  };
}

/** The dry run of a definition already loaded: what `planJob` runs. */
export async function dryRun(opts: {
  def: JobDefinition;
  req: Pick<RunJobRequest, 'source' | 'full' | 'mode'>;
  store: StateStore;
  client: PlatformClient;
  logger: Logger;
  /** Where the source's credentials and `${NAME}` references are read (config's `sourceEnv`). */
  env: SourceEnv;
  /** The retry policy's numbers for the listing (config's `retry`); default RETRY_DEFAULTS. */
  retry?: RetrySettings;
  sample?: number;
  /**
   * Every action as it is planned, unchanged rows included, in row order per
   * batch (for `plan --json`, which streams them). A row found later to share
   * an identity with a later row comes again as a `conflict`.
   */
  onActions?: (actions: readonly Action[]) => void | Promise<void>;
}): Promise<DryRunResult> {
  const { def, store } = opts;
  const sample = opts.sample ?? 100;
  const index = await store.index.info(def.entity);
  const stale =
    !index || opts.req.full || Date.now() - index.refreshedAt > def.indexMaxAgeHours * 3_600_000;
  const listed = stale ? await listIntoMemory(opts.client, def.entity, opts.retry) : undefined;
  // A prefix never synced holds no state to look up: the listing alone names each record.
  const noState = !(await store.hasState());

  const claims = new MemoryClaims();
  const survivors = new MemorySurvivors(def.mapping.duplicates.keep);
  const kept: Action[] = [];
  const perKind = new Map<string, number>();
  const warned: RowWarning[] = [];
  const sink: PlanningSink = {
    claim: async (entries) => claims.claim(entries),
    contend: async (_keep, entries) => survivors.contend(entries),
    lookup: async (records) =>
      noState
        ? records.map((r): Known => matchListed(listed, r.keys))
        : await store.records.lookup(def.entity, records, {
            job: def.name,
            ...(listed && { listing: listed }),
          }),
    accept: async (actions, warnings) => {
      await opts.onActions?.(actions);
      for (const a of actions) {
        if (a.kind === 'unchanged') continue;
        const n = perKind.get(a.kind) ?? 0;
        if (n < sample) kept.push(a);
        perKind.set(a.kind, n + 1);
      }
      warned.push(...warnings.slice(0, sample - warned.length));
    },
    withdraw: async (rows) => {
      await opts.onActions?.(rows.map((r) => r.action));
      for (const r of rows) kept.push(r.action);
    },
  };
  let paths: CoverageSummary | undefined;
  const counts = await planExport({
    entity: def.entity,
    mapping: def.mapping,
    source: sourceOf(def, opts.req),
    env: sourceEnvOf(def, opts.req, opts.env),
    mode: (opts.req.mode ?? def.mode) as Mode,
    memberUpdates: def.membersUpdate === 'put',
    duplicates: def.mapping.duplicates,
    verifyRemote: opts.req.full === true,
    sink,
    logger: opts.logger,
    checkPaths: (coverage) => void (paths = coverage),
  });
  return {
    counts,
    actions: kept,
    warnings: warned,
    indexSource: listed ? 'listed' : 'stored',
    ...(paths && { paths }),
  };
}

/** A listing of the platform made now, in memory. */
class Listed implements Listing {
  readonly ids = new Map<string, number>();
  readonly remote = new Map<number, Record<string, unknown>>();

  idOf(key: string): number | undefined {
    return this.ids.get(key);
  }

  valuesOf(platformId: number): Record<string, unknown> | undefined {
    return this.remote.get(platformId);
  }
}

async function listIntoMemory(
  client: PlatformClient,
  entity: Entity,
  retry: RetrySettings | undefined,
): Promise<Listed> {
  const listed = new Listed();
  // A transient fault costs that page again, as in a real run's listing; a dry
  // run has no queue to pause, so a 429 (or any other end of the retries) ends it.
  const eachPage = <R>(get: () => Promise<R>): Promise<R> =>
    withRetry(get, { operation: 'list', ...(retry && { settings: retry }) });
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
 * A record as the listing alone names it, for a prefix that holds no state:
 * the strongest key the listing knows, with the platform's current values.
 */
function matchListed(listed: Listed | undefined, keys: readonly string[]): Known {
  const match =
    listed &&
    strongestMatch(
      keys,
      [],
      keys.map((k) => listed.idOf(k)),
    );
  if (!match) return {};
  const remote = listed!.valuesOf(match.platformId);
  return { platformId: match.platformId, matchedBy: match.key, ...(remote && { remote }) };
}
