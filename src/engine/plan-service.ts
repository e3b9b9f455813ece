/**
 * Planning a job without writing anything: what a run of it would create,
 * update and refuse, with field diffs (the dry run). Used by `crm-sync plan`
 * (and `run --dry-run`); its dependencies come in `PlanDeps`, no process
 * globals, so a server can call it as the CLI does.
 */
import type { SourceEnv } from '../crm/source.js';
import type { JobDefinition } from '../jobs/definition.js';
import type { Logger } from '../log.js';
import type { PlatformClient } from '../platform/client.js';
import type { StateStore } from '../state/store.js';
import type { Action, Mode } from '../sync/action.js';
import { dryRun, type DryRunResult } from './dry-run.js';
import type { PlanCounts } from './plan-pass.js';
import type { JobLoader } from './run-service.js';
import type { RunSummary } from './run-summary.js';

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
