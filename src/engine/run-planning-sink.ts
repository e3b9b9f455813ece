/**
 * The planning sink of a real run: where the planning pass (`planExport`)
 * puts what it decides, in the run's scratch in Redis (planned writes,
 * failure rows, platform ids seen, adoptions committed to state). The dry run
 * plans with an in-memory sink instead.
 */
import type { JobDefinition } from '../jobs/definition.js';
import type { CommitEntry } from '../state/records.js';
import type { FailureRow } from '../state/runs.js';
import type { StateStore } from '../state/store.js';
import type { DuplicatesRule } from '../crm/duplicates.js';
import { describeRule, duplicateAction, isWrite, type WriteAction } from '../sync/action.js';
import type { PlanningSink } from './plan-pass.js';

/** The planning sink of a real run: scratch, failures and adoptions go to Redis. */
export function redisPlanningSink(
  store: StateStore,
  runId: string,
  entity: JobDefinition['entity'],
  job: string,
  /** The run compares with the platform's values even where the hash matches (`--full`). */
  opts: {
    verifyRemote?: boolean;
    /** The job's survivor rule: its duplicates are reported when the export is planned. */
    duplicates?: DuplicatesRule;
  } = {},
): PlanningSink {
  const planning = { verifyRemote: opts.verifyRemote === true };
  return {
    claim: (entries) => store.claims.claim(runId, entries),
    contend: (keep, entries) => store.survivors.contend(runId, keep, entries),
    lookup: (records) => store.records.lookup(entity, records, { job, planning }),
    async accept(actions, warnings) {
      const writes: WriteAction[] = [];
      const failures: FailureRow[] = [];
      const seen: number[] = [];
      const adopted: CommitEntry[] = [];
      for (const a of actions) {
        if (isWrite(a)) writes.push(a);
        if ('platformId' in a && a.platformId !== undefined) seen.push(a.platformId);
        switch (a.kind) {
          case 'adopt':
            adopted.push({ keys: a.keys, platformId: a.platformId, hash: a.hash, runId, job });
            break;
          case 'invalid':
            failures.push({
              line: a.line,
              kind: 'invalid',
              reason: a.reason,
              ...(a.field !== undefined && { field: a.field }),
              ...(a.value !== undefined && { value: a.value }),
              ...(a.identity !== undefined && { identity: a.identity }),
            });
            break;
          case 'skip':
            // Listed when a skip rule of the mapping matched; a skip by the run's mode is not.
            if (a.rule !== undefined) {
              failures.push({
                line: a.line,
                kind: 'skipped',
                field: `skip.${a.rule}`,
                reason: a.reason,
                ...(a.value !== undefined && { value: a.value }),
                ...(a.keys[0] !== undefined && { identity: a.keys[0] }),
              });
            }
            break;
          case 'conflict':
            failures.push({
              line: a.line,
              kind: 'conflict',
              reason: a.reason,
              identity: a.identity,
              ...(a.keys[0] !== undefined && { record: a.keys[0] }),
            });
            break;
          // A duplicate is reported once the export is planned, naming the survivor then (finish).
          case 'unsupported':
            failures.push({
              line: a.line,
              kind: 'unsupported',
              reason: a.reason,
              identity: a.keys[0]!,
              record: a.keys[0]!,
            });
            break;
          case 'pending':
            failures.push({
              line: a.line,
              kind: 'failed',
              reason: a.reason,
              identity: a.keys[0]!,
              record: a.keys[0]!,
            });
            break;
        }
      }
      if (warnings.length > 0) {
        for (const w of warnings) failures.push({ ...w, kind: 'warning' });
        // In row order, each row's warnings after its other failure (a stable sort).
        failures.sort((x, y) => x.line - y.line);
      }
      await Promise.all([
        store.plannedWrites.save(runId, writes),
        store.runs.addFailures(runId, failures),
        store.seen.mark(runId, seen),
        store.records.commit(entity, adopted),
      ]);
    },
    // Duplicates are decided: each is reported with its survivor, then the claims' memory is
    // freed before the writes begin.
    async finish() {
      if (opts.duplicates !== undefined && opts.duplicates.keep !== 'none') {
        const rule = describeRule(opts.duplicates.keep, opts.duplicates.by);
        for await (const page of store.survivors.duplicates(runId)) {
          await store.runs.addFailures(
            runId,
            page.map((d) => {
              const a = duplicateAction(entity, { ...d, keys: [] }, d.identity, d.survivor, rule);
              return {
                line: d.line,
                kind: 'duplicate' as const,
                reason: a.reason,
                identity: d.identity,
                record: d.record,
                survivor: d.survivor,
              };
            }),
          );
        }
      }
      await store.claims.release(runId);
    },
    async withdraw(rows) {
      await store.plannedWrites.drop(
        runId,
        rows.filter((r) => r.was === 'create' || r.was === 'update').map((r) => r.action.line),
      );
      const conflicts: FailureRow[] = [];
      for (const { action: a } of rows)
        if (a.kind === 'conflict')
          conflicts.push({
            line: a.line,
            kind: 'conflict',
            reason: a.reason,
            identity: a.identity,
          });
      await store.runs.addFailures(runId, conflicts);
    },
  };
}
