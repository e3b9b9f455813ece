/**
 * The planning pass of a run: stream the export, map and validate each row,
 * identify and hash it, find duplicate identities across the whole export,
 * look up what is known of each record and decide its action. Batches go
 * through; the export is never held whole. Where the results go (Redis for a
 * real run, memory for a dry run) is the caller's `PlanningSink`.
 */
import type { CompiledMapping, FieldWarning, MapResult, SkippedRow } from '../crm/mapped.js';
import { PathCoverage, type CoverageSummary } from '../crm/path-coverage.js';
import { readRows } from '../crm/read.js';
import { isNotUtf8Problem } from '../crm/utf8.js';
import type { SourceEnv } from '../crm/source.js';
import type { SourceSpec } from '../crm/source-spec.js';
import type { Logger } from '../log.js';
import {
  ACTION_KINDS,
  conflictAction,
  invalidAction,
  isWrite,
  type Action,
  type ActionKind,
  type ConflictAction,
  type Mode,
  type SkipAction,
  type WriteAction,
} from '../sync/action.js';
import { contentHash } from '../sync/hash.js';
import { identityKeys, noIdentityReason, type Entity } from '../sync/identity.js';
import { planBatch, type Known, type PlanInput } from '../sync/plan.js';
import type { Claim, ClaimConflict } from '../sync/claims.js';

/** Where a planning pass reads state from and puts its results. */
export interface PlanningSink {
  claim(entries: readonly Claim[]): Promise<ClaimConflict[]>;
  lookup(records: readonly { keys: readonly string[] }[]): Promise<Known[]>;
  /**
   * Every action of a batch, in row order (writes, no-ops and withheld rows
   * alike), and the warnings of its rows: optional fields left out because
   * their value failed.
   */
  accept(actions: readonly Action[], warnings: readonly RowWarning[]): Promise<void>;
  /**
   * Rows planned in an earlier batch that turned out to share an identity
   * with a later row: `was` is what they had been planned as.
   */
  withdraw(rows: readonly Withdrawn[]): Promise<void>;
}

/** A field left out of a row's body because its value failed (the row was still planned). */
export interface RowWarning extends FieldWarning {
  line: number;
  /** The row's first identity key, when it has one. */
  identity?: string;
}

export interface Withdrawn {
  was: ActionKind;
  conflict: ConflictAction;
}

/** Rows of each action kind, rows read, and warnings (fields left out, one per field). */
export type PlanCounts = Record<ActionKind, number> & {
  read: number;
  warnings: number;
  /** Of the invalid rows, those with bytes that are not UTF-8 (for the invalid-rows threshold). */
  notUtf8: number;
};

export interface PlanningOptions {
  entity: Entity;
  mapping: CompiledMapping;
  source: SourceSpec;
  /** Where the source's credentials and `${NAME}` references are read (config's `sourceEnv`). */
  env: SourceEnv;
  mode: Mode;
  memberUpdates: boolean;
  /** Compare with the platform's values even where the stored hash matches (`--full`). */
  verifyRemote?: boolean;
  sink: PlanningSink;
  logger: Logger;
  signal?: AbortSignal;
  batchSize?: number;
  /** Called after each batch with the counts so far. */
  onProgress?: (counts: PlanCounts) => void | Promise<void>;
  /**
   * Called once with the path coverage of the first rows (COVERAGE_ROWS, or
   * every row of a shorter export). A reason returned ends planning there,
   * before the rest of the export is read: a required path that finds nothing
   * would make every row invalid.
   */
  checkPaths?: (coverage: CoverageSummary) => string | undefined;
}

export function emptyCounts(): PlanCounts {
  return {
    read: 0,
    create: 0,
    update: 0,
    adopt: 0,
    unchanged: 0,
    skip: 0,
    unsupported: 0,
    pending: 0,
    invalid: 0,
    notUtf8: 0,
    conflict: 0,
    warnings: 0,
  };
}

/**
 * The action kind of each line planned so far, one byte per line, so that a
 * row found in conflict after its batch was planned can be moved out of its
 * first count. Memory is a byte per line of the export, nothing more.
 */
class LineKinds {
  private bytes = new Uint8Array(1 << 16);
  private static readonly codes = ACTION_KINDS;

  set(line: number, kind: ActionKind): void {
    if (line >= this.bytes.length) {
      let size = this.bytes.length;
      while (size <= line) size *= 2;
      const grown = new Uint8Array(size);
      grown.set(this.bytes);
      this.bytes = grown;
    }
    this.bytes[line] = LineKinds.codes.indexOf(kind) + 1;
  }

  get(line: number): ActionKind | undefined {
    const code = line < this.bytes.length ? this.bytes[line]! : 0;
    return code === 0 ? undefined : LineKinds.codes[code - 1];
  }
}

/** Maps, identifies and plans every row of the export. Returns the final counts. */
export async function planExport(opts: PlanningOptions): Promise<PlanCounts> {
  const { entity, mapping, sink } = opts;
  const counts = emptyCounts();
  const kinds = new LineKinds();
  const paths = opts.checkPaths && new PathCoverage(mapping.paths);
  let pathsChecked = !paths;
  const readOpts = {
    ...(opts.signal && { signal: opts.signal }),
    ...(opts.batchSize && { batchSize: opts.batchSize }),
    logger: opts.logger,
    env: opts.env,
  };

  for await (const rows of readRows(opts.source, readOpts)) {
    if (!pathsChecked) {
      for (const row of rows) if ('record' in row) paths!.observe(row.record);
      if (paths!.full) {
        pathsChecked = true;
        if (opts.checkPaths!(paths!.summary()) !== undefined) return counts;
      }
    }
    counts.read += rows.length;
    const results: MapResult[] = rows.map((row) => mapping.map(row));

    // Identify and hash the valid rows; the rest are invalid now.
    const actions: (Action | undefined)[] = new Array(results.length);
    const inputs: PlanInput[] = [];
    const inputAt: number[] = [];
    const warnings: RowWarning[] = [];
    for (let i = 0; i < results.length; i++) {
      const r = results[i]!;
      if (!r.ok) {
        if (isNotUtf8Problem(r.reason)) counts.notUtf8++;
        actions[i] = r.skip ? skippedAction(r) : invalidAction(r.line, r.reason, r);
        continue;
      }
      const body = r.body as Record<string, unknown>;
      const keys = identityKeys(entity, body);
      if (r.warnings) {
        for (const w of r.warnings) {
          warnings.push({
            line: r.line,
            ...w,
            ...(keys[0] !== undefined && { identity: keys[0] }),
          });
        }
      }
      if (keys.length === 0) {
        actions[i] = invalidAction(r.line, noIdentityReason(entity), { field: '(identity)' });
        continue;
      }
      inputs.push({ line: r.line, body, keys, hash: contentHash(body, mapping.fingerprint) });
      inputAt.push(i);
    }

    // Duplicate identities, in this batch and against every earlier one.
    const conflicts = await sink.claim(inputs.map((p) => ({ keys: p.keys, line: p.line })));
    const conflictOf = new Map<number, ClaimConflict>();
    const earlier: ClaimConflict[] = [];
    for (const c of conflicts) {
      if (c.earlier) earlier.push(c);
      else conflictOf.set(c.line, c);
    }

    const toPlan: PlanInput[] = [];
    const toPlanAt: number[] = [];
    inputs.forEach((p, n) => {
      const c = conflictOf.get(p.line);
      if (c)
        actions[inputAt[n]!] = conflictAction(entity, p.line, p.keys, c.identity, c.otherLines);
      else {
        toPlan.push(p);
        toPlanAt.push(inputAt[n]!);
      }
    });

    const known = await sink.lookup(toPlan);
    const planned = planBatch(toPlan, known, {
      entity,
      mode: opts.mode,
      memberUpdates: opts.memberUpdates,
      verifyRemote: opts.verifyRemote === true,
    });
    planned.forEach((a, n) => (actions[toPlanAt[n]!] = a));

    const done = actions as Action[];
    for (const a of done) {
      counts[a.kind]++;
      kinds.set(a.line, a.kind);
    }
    counts.warnings += warnings.length;
    await sink.accept(done, warnings);

    if (earlier.length > 0) {
      const moved: Withdrawn[] = [];
      for (const c of earlier) {
        const was = kinds.get(c.line);
        if (was === undefined || was === 'conflict') continue;
        counts[was]--;
        counts.conflict++;
        kinds.set(c.line, 'conflict');
        moved.push({ was, conflict: conflictAction(entity, c.line, [], c.identity, c.otherLines) });
      }
      if (moved.length > 0) await sink.withdraw(moved);
    }
    await opts.onProgress?.(counts);
  }
  if (!pathsChecked) opts.checkPaths!(paths!.summary());
  return counts;
}

/** A row a skip rule of the mapping matched: not a live record of the CRM. */
function skippedAction(r: SkippedRow): SkipAction {
  return {
    kind: 'skip',
    line: r.line,
    keys: r.identity === undefined ? [] : [r.identity],
    reason: r.reason,
    rule: r.rule,
    ...(r.value !== undefined && { value: r.value }),
  };
}

/** The write actions of a batch. */
export function writesOf(actions: readonly Action[]): WriteAction[] {
  return actions.filter(isWrite);
}
