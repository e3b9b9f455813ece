/**
 * The short forms `npm run bench -- check` runs, by scenario name (the
 * `scenario` of a target in bench/targets.json): one line per scenario,
 * loading the `shortForm` its module exports. A scenario a target names that
 * has no line here has its targets printed `not available`.
 */
import type { ShortForm } from '../run.js';

export const SHORT_FORMS: Readonly<Record<string, () => Promise<ShortForm>>> = {
  'plan-scale': async () => (await import('../scenarios/plan-scale.js')).shortForm,
  'sync-cost': async () => (await import('../scenarios/sync-cost.js')).shortForm,
  rate: async () => (await import('../scenarios/rate.js')).shortForm,
  'state-memory': async () => (await import('../scenarios/state-memory.js')).shortForm,
  fairness: async () => (await import('../scenarios/fairness.js')).shortForm,
};
