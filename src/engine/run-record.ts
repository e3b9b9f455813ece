/**
 * A run's record as it starts: status `queued`, with its job, entity, mode,
 * source (without credentials) and options. Written where a run is submitted
 * (run-service.ts) and where a worker takes a run that has none (run.ts).
 */
import type { JobDefinition } from '../jobs/definition.js';
import type { RunRecord } from '../state/runs.js';
import type { StateStore } from '../state/store.js';
import type { RunJobRequest } from './payloads.js';
import { sourceLabel } from './run-source.js';

/** Creates the run record (status `queued`) unless it exists; returns it. */
export async function createRunRecord(
  store: StateStore,
  runId: string,
  def: JobDefinition | undefined,
  req: RunJobRequest,
): Promise<RunRecord> {
  await store.runs.create({
    id: runId,
    job: req.job,
    entity: def?.entity ?? 'companies',
    mode: req.mode ?? def?.mode ?? 'upsert',
    source: def ? sourceLabel(def, req) : (req.source ?? '(unknown)'),
    options: {
      full: req.full,
      force: req.force,
      trigger: req.trigger,
      ...(req.slot && { slot: req.slot }),
      ...(req.retryOf && { retryOf: req.retryOf }),
    },
  });
  return (await store.runs.get(runId))!;
}
