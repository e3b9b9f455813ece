/**
 * The planning pass the planning benchmarks measure: the generated HubSpot
 * companies export (a local file, so no credentials) planned with the
 * `hubspot-companies` preset into the sink a benchmark gives.
 */
import { loadMapping } from '../../src/crm/presets.js';
import { planExport, type PlanCounts, type PlanningSink } from '../../src/engine/plan-pass.js';
import { silentLogger } from '../../src/log.js';

/** The run id of the benchmarks' planning passes (whose scratch a bench clears between passes). */
export const PLAN_RUN_ID = 'bench-plan-run';

export function planGeneratedCompanies(
  path: string,
  sink: PlanningSink,
  /** Rows per batch; the planner's default when not given. */
  batchSize?: number,
): Promise<PlanCounts> {
  return planExport({
    ...(batchSize !== undefined && { batchSize }),
    entity: 'companies',
    mapping: loadMapping('hubspot-companies'),
    source: { path },
    env: {},
    mode: 'upsert',
    memberUpdates: false,
    sink,
    logger: silentLogger,
  });
}
