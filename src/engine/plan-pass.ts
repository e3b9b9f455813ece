/**
 * The planning pass of a run: stream the export, map and validate each row,
 * identify and hash it, find duplicate identities across the whole export,
 * look up what is known of each record and decide its action. Batches go
 * through; the export is never held whole. Where the results go (Redis for a
 * real run, memory for a dry run) is the caller's `PlanningSink`.
 */
import type { CompiledMapping, FieldWarning, SkippedRow } from '../crm/mapped.js';
import type { SourceRow } from '../crm/row.js';
import { PathCoverage, type CoverageSummary } from '../crm/path-coverage.js';
import { readRows } from '../crm/read.js';
import { isNotUtf8Problem } from '../crm/utf8.js';
import type { SourceEnv } from '../crm/source.js';
import type { SourceSpec } from '../crm/source-spec.js';
import type { Logger } from '../log.js';
import {
  ACTION_KINDS,
  conflictAction,
  describeRule,
  duplicateAction,
  invalidAction,
  isWrite,
  type Action,
  type ActionKind,
  type ConflictAction,
  type DuplicateAction,
  type Mode,
  type SkipAction,
  type WriteAction,
} from '../sync/action.js';
import { contentHash } from '../sync/hash.js';
import { identityKeys, noIdentityReason, type Entity } from '../sync/identity.js';
import { planBatch, type Known, type PlanInput } from '../sync/plan.js';
import type { Claim, ClaimConflict } from '../sync/claims.js';
import type { Entrant, KeepRule, Loss } from '../sync/survivors.js';
import { NO_DUPLICATE_RULE, type DuplicatesRule } from '../crm/duplicates.js';

/** Where a planning pass reads state from and puts its results. */
export interface PlanningSink {
  /** Claims a batch's identities when the job has no survivor rule: shared ones are conflicts. */
  claim(entries: readonly Claim[]): Promise<ClaimConflict[]>;
  /**
   * Claims a batch's identities under the job's survivor rule (`keep` other
   * than `none`): the rows that lost, of this batch and of earlier ones.
   */
  contend?(keep: KeepRule, entries: readonly Entrant[]): Promise<Loss[]>;
  /** What is known of each row's record; `hash` is the row's content hash. */
  lookup(records: readonly { keys: readonly string[]; hash: string }[]): Promise<Known[]>;
  /**
   * Every action of a batch, in row order (writes, no-ops and withheld rows
   * alike), and the warnings of its rows: optional fields left out because
   * their value failed, rows read as windows-1252.
   */
  accept(actions: readonly Action[], warnings: readonly RowWarning[]): Promise<void>;
  /**
   * Rows planned in an earlier batch that turned out to share an identity
   * with a later row: `was` is what they had been planned as.
   */
  withdraw(rows: readonly Withdrawn[]): Promise<void>;
  /** Called once every row of the export is planned (not when planning stops early). */
  finish?(): Promise<void>;
}

/**
 * A field left out of a row's body because its value failed, or (field
 * `(row)`) the reader's warning on the row; the row was still planned.
 */
export interface RowWarning extends FieldWarning {
  line: number;
  /** The row's first identity key, when it has one. */
  identity?: string;
}

export interface Withdrawn {
  was: ActionKind;
  /** What the row is now: a conflict, or a duplicate of a later row. */
  action: ConflictAction | DuplicateAction;
}

/** Rows of each action kind, rows read, and warnings (fields left out, one per field; rows read as windows-1252). */
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
  /** Which row keeps a record several rows claim (default: none, every such row a conflict). */
  duplicates?: DuplicatesRule;
  /** Compare with the platform's values even where the stored hash matches (`--full`). */
  verifyRemote?: boolean;
  sink: PlanningSink;
  logger: Logger;
  signal?: AbortSignal;
  /** Rows per batch; PLANNING_BATCH_ROWS when not given. */
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
    duplicate: 0,
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

/** A batch mapped, identified and hashed, before anything of it is claimed or looked up. */
interface Prepared {
  rows: number;
  notUtf8: number;
  /** Each row's action where it is decided already (invalid, skipped), in row order. */
  actions: (Action | undefined)[];
  inputs: PlanInput[];
  /** The position of each input's row in the batch. */
  inputAt: number[];
  /** Each input's rank under the survivor rule's `by` (only with a rule that has one). */
  ranks: (number | undefined)[];
  warnings: RowWarning[];
}

/**
 * Batches of one planning pass under way at once: read and mapped, their
 * lookups and claims sent, not yet accepted. With two, the planner waited on
 * Redis for about a third of a 1M-row pass (each batch's claims, lookup and
 * accept are round trips in turn); with four, the wall time of that pass fell
 * to 0.78 of two's (medians of five runs or more, plan-scale's child; six
 * gained nothing more). Each holds one batch of mapped rows: a few hundred bodies.
 */
export const BATCHES_UNDER_WAY = 4;

/**
 * Rows per batch when the caller names none (a run's `batchSize` is this).
 * V8 lets the old generation grow to about four times what is live at its
 * last full collection, and what is live while planning is mostly the rows
 * under way (their bodies, keys, hashes and lookup replies). Batches of 500
 * planned a 1M-row unchanged export 3-6% faster than 250 but peaked 9-19 MiB
 * higher in RSS, above the planner that took one batch at a time; at 250
 * the peak is below it (docs/BENCHMARKS.md, plan-scale).
 */
export const PLANNING_BATCH_ROWS = 250;

/**
 * Maps, identifies and plans every row of the export. Returns the final
 * counts. Up to BATCHES_UNDER_WAY batches are under way at once, so that the
 * process and Redis work at the same time: a batch is mapped, identified and
 * hashed, and its lookup and claims go out, while the batches before it are
 * still claimed, planned and accepted. A lookup only reads, so it goes at
 * once; claims decide in export order (each batch's after the previous
 * batch's); a batch is planned, accepted and its earlier rows withdrawn only
 * after the previous batch's, so the sink sees results one batch after the
 * other, in export order.
 */
export async function planExport(opts: PlanningOptions): Promise<PlanCounts> {
  const { mapping, sink } = opts;
  const rule = opts.duplicates ?? NO_DUPLICATE_RULE;
  if (rule.keep !== 'none' && sink.contend === undefined)
    throw new Error('a survivor rule needs a planning sink that contends');
  const counts = emptyCounts();
  const kinds = new LineKinds();
  const paths = opts.checkPaths && new PathCoverage(mapping.paths);
  let pathsChecked = !paths;
  const readOpts = {
    ...(opts.signal && { signal: opts.signal }),
    batchSize: opts.batchSize ?? PLANNING_BATCH_ROWS,
    logger: opts.logger,
    env: opts.env,
  };

  // The claims of the batch sent last, and its whole work with the sink.
  let claimed: Promise<unknown> = Promise.resolve();
  let inFlight: Promise<void> | undefined;
  // Every call of each batch under way (its lookup, its claims, its whole work with the sink),
  // oldest first: a failure leaves none of them running.
  const underWay: (readonly [Promise<unknown>, Promise<unknown>, Promise<void>])[] = [];
  try {
    for await (const rows of readRows(opts.source, readOpts)) {
      if (!pathsChecked) {
        for (const row of rows)
          if ('record' in row) paths!.observe(row.record, mapping.skips(row.record));
        if (paths!.full) {
          pathsChecked = true;
          if (opts.checkPaths!(paths!.summary()) !== undefined) {
            await inFlight;
            return counts;
          }
        }
      }
      const prepared = prepare(opts, rows, rule);
      // A lookup reads and decides nothing: it goes out now, while earlier batches settle.
      const known =
        prepared.inputs.length === 0 ? Promise.resolve([]) : sink.lookup(prepared.inputs);
      // Under a survivor rule a batch's claims wait for its lookup too: whether a row already
      // holds its record (sticky) comes from our state.
      const conflicts: Promise<Claimed> =
        rule.keep === 'none'
          ? claimed.then(async () => ({
              conflicts: await sink.claim(
                prepared.inputs.map((i) => ({ keys: i.keys, line: i.line })),
              ),
            }))
          : Promise.all([claimed, known]).then(async ([, k]) => ({
              losses: await sink.contend!(rule.keep, entrants(prepared, k)),
            }));
      claimed = conflicts;
      const previous = inFlight;
      inFlight = (async () => {
        const [c, k] = await Promise.all([conflicts, known]);
        await previous;
        await settle(opts, prepared, c, k, counts, kinds);
      })();
      // Each is awaited through the batch after it, or below; never left unobserved.
      const calls = [known, conflicts, inFlight] as const;
      for (const p of calls) p.catch(() => undefined);
      underWay.push(calls);
      // The next batch is read once the oldest under way has settled (kept in the list until
      // then, so that a failure of its work still waits for its lookup).
      if (underWay.length >= BATCHES_UNDER_WAY) {
        await underWay[0]![2];
        underWay.shift();
      }
    }
    await inFlight;
    await sink.finish?.();
  } finally {
    // A failure leaves nothing of this pass running behind it.
    await Promise.allSettled(underWay.flat());
  }
  if (!pathsChecked) opts.checkPaths!(paths!.summary());
  return counts;
}

type Rec = Record<string, unknown>;

/** What a batch's claims decided: conflicts (no survivor rule), or the rows that lost. */
type Claimed = { conflicts: ClaimConflict[] } | { losses: Loss[] };

/** The rows of a prepared batch as the survivor rule compares them. */
function entrants(p: Prepared, known: readonly Known[]): Entrant[] {
  return p.inputs.map((i, n) => {
    const k = known[n];
    return {
      line: i.line,
      keys: i.keys,
      // Our state maps the row's strongest key to the record: the record is this CRM record's.
      sticky:
        k !== undefined &&
        k.platformId !== undefined &&
        k.storedHash !== undefined &&
        k.matchedBy === i.keys[0],
      rank: p.ranks[n],
      ref: i.keys[0]!,
    };
  });
}

/** Identifies and hashes the valid rows of a batch; the rest are decided (invalid, skipped) now. */
function prepare(
  opts: PlanningOptions,
  rows: readonly SourceRow[],
  rule: DuplicatesRule,
): Prepared {
  const { entity, mapping } = opts;
  const out: Prepared = {
    rows: rows.length,
    notUtf8: 0,
    actions: new Array<Action | undefined>(rows.length),
    inputs: [],
    inputAt: [],
    ranks: [],
    warnings: [],
  };
  const ranked = rule.by !== undefined;
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!;
    const r = mapping.map(row);
    if (!r.ok) {
      if (isNotUtf8Problem(r.reason)) out.notUtf8++;
      out.actions[i] = r.skip ? skippedAction(r) : invalidAction(r.line, r.reason, r);
      continue;
    }
    const body = r.body as Record<string, unknown>;
    const keys = identityKeys(entity, body);
    if (r.warnings) {
      for (const w of r.warnings) {
        out.warnings.push({
          line: r.line,
          ...w,
          ...(keys[0] !== undefined && { identity: keys[0] }),
        });
      }
    }
    if (keys.length === 0) {
      out.actions[i] = invalidAction(r.line, noIdentityReason(entity), { field: '(identity)' });
      continue;
    }
    out.inputs.push({ line: r.line, body, keys, hash: contentHash(body, mapping.fingerprint) });
    out.inputAt.push(i);
    out.ranks.push(ranked && 'record' in row ? rule.rank(row.record as Rec) : undefined);
  }
  return out;
}

/**
 * A prepared batch, its identities claimed (duplicates in this batch and
 * against every earlier one) and its records looked up (looking up a row
 * that the claims withhold costs only its share of the call): planned,
 * accepted, and earlier rows it found in conflict withdrawn.
 */
async function settle(
  opts: PlanningOptions,
  p: Prepared,
  claimed: Claimed,
  knownAll: readonly Known[],
  counts: PlanCounts,
  kinds: LineKinds,
): Promise<void> {
  const { entity, sink } = opts;
  const { actions, inputs, inputAt, warnings } = p;
  counts.read += p.rows;
  counts.notUtf8 += p.notUtf8;

  // The rows withheld by the claims: in this batch by line, and rows of earlier batches.
  const withheldOf = new Map<number, (keys: string[]) => ConflictAction | DuplicateAction>();
  const earlier: ((keys: string[]) => ConflictAction | DuplicateAction)[] = [];
  const earlierLines: number[] = [];
  if ('conflicts' in claimed) {
    for (const c of claimed.conflicts) {
      const make = (keys: string[]) =>
        conflictAction(entity, c.line, keys, c.identity, c.otherLines);
      if (c.earlier) {
        earlier.push(make);
        earlierLines.push(c.line);
      } else withheldOf.set(c.line, make);
    }
  } else {
    const rule = describeRule(opts.duplicates!.keep, opts.duplicates!.by);
    for (const l of claimed.losses) {
      const make = (keys: string[]) =>
        duplicateAction(
          entity,
          { line: l.line, keys, record: l.ref },
          l.identity,
          { line: l.winner, record: l.winnerRef },
          rule,
        );
      if (l.earlier) {
        earlier.push(make);
        earlierLines.push(l.line);
      } else withheldOf.set(l.line, make);
    }
  }

  const toPlan: PlanInput[] = [];
  const toPlanAt: number[] = [];
  const known: Known[] = [];
  inputs.forEach((i, n) => {
    const withheld = withheldOf.get(i.line);
    if (withheld) actions[inputAt[n]!] = withheld(i.keys);
    else {
      toPlan.push(i);
      toPlanAt.push(inputAt[n]!);
      known.push(knownAll[n]!);
    }
  });

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
    earlier.forEach((make, n) => {
      const line = earlierLines[n]!;
      const was = kinds.get(line);
      const action = make([]);
      if (was === undefined || was === action.kind) return;
      counts[was]--;
      counts[action.kind]++;
      kinds.set(line, action.kind);
      moved.push({ was, action });
    });
    if (moved.length > 0) await sink.withdraw(moved);
  }
  await opts.onProgress?.(counts);
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
