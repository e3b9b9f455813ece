/**
 * The planning pass the planning benchmarks measure: the generated HubSpot
 * companies export (a local file, so no credentials) planned with the
 * `hubspot-companies` preset into the sink a benchmark gives.
 */
import {
  compileDuplicates,
  NO_DUPLICATE_RULE,
  type DuplicatesRule,
} from '../../src/crm/duplicates.js';
import { loadMapping } from '../../src/crm/presets.js';
import { planExport, type PlanCounts, type PlanningSink } from '../../src/engine/plan-pass.js';
import { silentLogger } from '../../src/log.js';
import { KEEP_RULES, type KeepRule } from '../../src/sync/survivors.js';

/** The run id of the benchmarks' planning passes (whose scratch a bench clears between passes). */
export const PLAN_RUN_ID = 'bench-plan-run';

/**
 * The survivor rules a list names (`none,newest`; empty: none), each checked:
 * none, newest, oldest, first or last.
 */
export function benchRules(list: string | undefined): string[] {
  const rules = (list || 'none').split(',').map((r) => r.trim());
  for (const rule of rules)
    if (!(KEEP_RULES as readonly string[]).includes(rule))
      throw new Error(`BENCH_DUPLICATES: ${rule} is none of ${KEEP_RULES.join(', ')}`);
  return rules;
}

/**
 * The survivor rule of the passes: none (the default), or BENCH_DUPLICATES
 * (newest, oldest, first or last) with the generated rows' `Create Date` as
 * `by`, so that each row has a rank. The generated rows share no identity:
 * every row wins its claims, as in an export without duplicates.
 */
export function benchDuplicates(): DuplicatesRule {
  const rules = benchRules(process.env.BENCH_DUPLICATES);
  if (rules.length !== 1) throw new Error('BENCH_DUPLICATES: one rule here, not a list');
  const keep = rules[0] as KeepRule;
  if (keep === 'none') return NO_DUPLICATE_RULE;
  return compileDuplicates({ keep, by: ['Create Date'] });
}

/** The rule as the benchmarks' notes name it. */
export function benchDuplicatesText(): string {
  const rule = benchDuplicates();
  return rule.keep === 'none'
    ? 'no survivor rule (every shared identity a conflict)'
    : `survivor rule duplicates: {keep: ${rule.keep}, by: Create Date} (BENCH_DUPLICATES)`;
}

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
    duplicates: benchDuplicates(),
    sink,
    logger: silentLogger,
  });
}
