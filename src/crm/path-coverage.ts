/**
 * Path coverage: over the first rows of an export, how many rows each value a
 * mapping reads (a `from` column or path, a template placeholder) was found
 * in. A path that finds nothing in any of them is almost always a typo or the
 * wrong shape (`values.name.value` for a list), and every row would then lack
 * the field; the report names the path, where it stopped and the nearest keys
 * seen there. `checkPathCoverage` (pure) says whether a run may go on: not
 * when a required field found nothing.
 */
import { ALL, formatSegments, type Segment } from './json-path.js';
import { compileRef, readingRecord, sameKeys, type RecordRef, type RefMiss } from './record-ref.js';

/** Rows read before the check: enough to see every column, few enough to be quick. */
export const COVERAGE_ROWS = 1_000;

/** One value a mapping reads. */
export interface PathUse {
  /** Where in the mapping: `fields.name`, `custom.industry`. */
  field: string;
  /** A `from` list (the first present wins, so one found is enough) or one placeholder. */
  refs: readonly string[];
  /** Required with no default: a row without it is invalid. */
  required: boolean;
}

export interface RefCoverage {
  ref: string;
  /** Rows where it found a value (JSON null included: the key is there). */
  rows: number;
  /** When it found nothing: where it stopped and what was there. */
  hint?: string;
}

export interface UseCoverage {
  field: string;
  required: boolean;
  refs: RefCoverage[];
}

export interface CoverageSummary {
  /** Rows looked at. */
  rows: number;
  /**
   * Of those, rows a skip rule of the mapping skips (present when any): not
   * counted, since no field is read from them (a list of people and
   * organizations, read for one kind).
   */
  skipped?: number;
  /** False when the export had fewer rows than the limit: these were all of them. */
  partial: boolean;
  uses: UseCoverage[];
}

const MAX_KEYS = 500;

/** What the misses of one reference had in common, at the deepest point reached. */
class Trace {
  depth = -1;
  keys = new Set<string>();
  kinds = new Set<string>();
  longest = 0;
  notJson = false;
  /** The keys added last: the rows of a CSV, and most of a JSON export's, share theirs. */
  private lastKeys: string[] = [];

  add(m: RefMiss): void {
    if (m.depth < this.depth) return;
    if (m.depth > this.depth) {
      this.depth = m.depth;
      this.keys.clear();
      this.lastKeys = [];
      this.kinds.clear();
      this.longest = 0;
      this.notJson = false;
    }
    const at = m.at;
    if (m.notJson) this.notJson = true;
    else if (Array.isArray(at)) {
      this.kinds.add('list');
      this.longest = Math.max(this.longest, at.length);
    } else if (at !== null && typeof at === 'object') {
      this.kinds.add('object');
      const keys = Object.keys(at);
      if (sameKeys(keys, this.lastKeys)) return;
      this.lastKeys = keys;
      for (const k of keys) if (this.keys.size < MAX_KEYS) this.keys.add(k);
    } else this.kinds.add(at === null ? 'null' : at === undefined ? 'nothing' : `a ${typeof at}`);
  }
}

interface Tracked {
  use: PathUse;
  refs: { ref: RecordRef; rows: number; trace: Trace }[];
}

export class PathCoverage {
  private readonly tracked: Tracked[];
  private seen = 0;
  private skipped = 0;

  constructor(
    uses: readonly PathUse[],
    readonly limit = COVERAGE_ROWS,
  ) {
    this.tracked = uses.map((use) => ({
      use,
      refs: use.refs.map((r) => ({ ref: compileRef(r), rows: 0, trace: new Trace() })),
    }));
  }

  /** Rows looked at so far. */
  get rows(): number {
    return this.seen;
  }

  /** The limit is reached: further rows are not looked at. */
  get full(): boolean {
    return this.seen >= this.limit;
  }

  /**
   * Looks at one record; anything but an object (a JSON array element `3`) is
   * not a row of fields. A row a skip rule skips (`skipped`) counts towards
   * the limit, but its paths are not checked.
   */
  observe(rec: Record<string, unknown>, skipped = false): void {
    if (this.full || rec === null || typeof rec !== 'object' || Array.isArray(rec)) return;
    this.seen++;
    if (skipped) {
      this.skipped++;
      return;
    }
    // The record's keys are read once for all the references, not once each.
    readingRecord(rec, () => {
      for (const t of this.tracked) {
        for (const r of t.refs) {
          if (r.ref.read(rec) !== undefined) r.rows++;
          // Where it missed matters only while it has found nothing at all.
          else if (r.rows === 0) {
            const miss = r.ref.miss(rec);
            if (miss) r.trace.add(miss);
          }
        }
      }
    });
  }

  summary(): CoverageSummary {
    const counted = this.seen - this.skipped;
    return {
      rows: this.seen,
      ...(this.skipped > 0 && { skipped: this.skipped }),
      partial: this.full,
      uses: this.tracked.map((t) => ({
        field: t.use.field,
        required: t.use.required,
        refs: t.refs.map((r) =>
          r.rows > 0 || counted === 0
            ? { ref: r.ref.text, rows: r.rows }
            : { ref: r.ref.text, rows: 0, hint: hintOf(r.ref, r.trace) },
        ),
      })),
    };
  }
}

function keyOf(seg: Segment | undefined): string | undefined {
  return seg === undefined || seg === ALL ? undefined : seg.key;
}

/** Why a reference found nothing, in words: where it stopped and the nearest keys there. */
function hintOf(ref: RecordRef, t: Trace): string {
  const segs = ref.path?.segments;
  const d = t.depth;
  const syntax = ref.syntax ? ` (not read as a path: ${ref.syntax})` : '';
  if (d <= 0 && !t.notJson) {
    const wanted = segs ? keyOf(segs[0])! : ref.text;
    return `no column "${wanted}"${keysNote(wanted, t.keys)}${syntax}`;
  }
  if (t.notJson) return `column "${keyOf(segs![0])}" holds text that is not JSON`;
  if (!segs || d >= segs.length) return 'found only null values';
  const where = formatSegments(segs, d);
  const seg = segs[d]!;
  const rest = formatSegments(segs).slice(where.length);
  if (t.kinds.has('object')) {
    const wanted = keyOf(seg)!;
    return `no key "${wanted}" in ${where}${keysNote(wanted, t.keys)}`;
  }
  if (t.kinds.has('list')) {
    if (seg !== ALL && 'index' in seg)
      return `${where} has at most ${t.longest} item${t.longest === 1 ? '' : 's'}`;
    return `${where} is a list: write ${where}[0]${rest} for the first item or ${where}[*]${rest} for all`;
  }
  const kinds = [...t.kinds].filter((k) => k !== 'nothing');
  if (kinds.length === 0) return `${where} is missing`;
  return `${where} is ${kinds.join(' or ')}, not ${seg !== ALL && 'index' in seg ? 'a list' : 'an object'}`;
}

function keysNote(wanted: string, keys: ReadonlySet<string>): string {
  if (keys.size === 0) return '';
  const near = nearestKeys(wanted, keys);
  if (near.length > 0) return ` (nearest: ${near.join(', ')})`;
  const some = [...keys].slice(0, 5);
  return ` (keys there: ${some.join(', ')}${keys.size > 5 ? ', …' : ''})`;
}

/** Up to three keys close to `wanted`: a small edit distance, or one inside the other (`Name` in `Company name`). */
export function nearestKeys(wanted: string, keys: Iterable<string>, max = 3): string[] {
  const w = wanted.trim().toLowerCase();
  const limit = Math.max(1, Math.floor(w.length / 3));
  const scored: { key: string; d: number }[] = [];
  for (const key of keys) {
    const k = key.trim().toLowerCase();
    const d = editDistance(w, k);
    const inside = Math.min(w.length, k.length) >= 3 && (k.includes(w) || w.includes(k));
    if (d <= limit || inside) scored.push({ key, d });
  }
  scored.sort((a, b) => a.d - b.d || a.key.localeCompare(b.key));
  return scored.slice(0, max).map((s) => s.key);
}

/** Edit distance: insertions, deletions, substitutions and swaps of two neighbours (`nmae`/`name`) cost 1. */
export function editDistance(a: string, b: string): number {
  let before: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      let d = Math.min(
        prev[j]! + 1,
        cur[j - 1]! + 1,
        prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d = Math.min(d, before[j - 2]! + 1);
      cur[j] = d;
    }
    before = prev;
    prev = cur;
  }
  return prev[b.length]!;
}

/** A value the mapping reads that found nothing in any row looked at. */
export interface UnmatchedPath {
  field: string;
  ref: string;
  required: boolean;
  hint: string;
}

/** Every use none of whose references found anything, one entry per reference. */
export function unmatchedPaths(s: CoverageSummary): UnmatchedPath[] {
  if (s.rows - (s.skipped ?? 0) === 0) return [];
  return s.uses.flatMap((u) =>
    u.refs.some((r) => r.rows > 0)
      ? []
      : u.refs.map((r) => ({
          field: u.field,
          ref: r.ref,
          required: u.required,
          hint: r.hint ?? '',
        })),
  );
}

/** "the first 1,000 rows" or "all 12 rows". */
export function rowsLooked(s: CoverageSummary): string {
  const n = s.rows.toLocaleString('en-US');
  return s.partial ? `the first ${n} rows` : `all ${n} row${s.rows === 1 ? '' : 's'}`;
}

/** One line for a person: `fields.name: values.nme[0].value found nothing in …: no key "nme" in values (nearest: name)`. */
export function describeUnmatched(u: UnmatchedPath, s: CoverageSummary): string {
  const skipped = s.skipped ? ` (${s.skipped.toLocaleString('en-US')} skipped by a skip rule)` : '';
  return `${u.field}: ${u.ref} found nothing in ${rowsLooked(s)}${skipped}${u.hint ? `: ${u.hint}` : ''}`;
}

/** One line per path that found nothing; a required one says that a run stops on it. */
export function coverageWarnings(s: CoverageSummary): string[] {
  return unmatchedPaths(s).map(
    (u) =>
      `${describeUnmatched(u, s)}${u.required ? ' (a required field: a run stops before writing)' : ''}`,
  );
}

export type CoverageVerdict = { ok: true } | { ok: false; reason: string };

/** Whether a run may go on: not when a required field's path found nothing in the rows looked at. */
export function checkPathCoverage(s: CoverageSummary): CoverageVerdict {
  const fatal = unmatchedPaths(s).filter((u) => u.required);
  if (fatal.length === 0) return { ok: true };
  return {
    ok: false,
    reason:
      `required ${fatal.map((u) => describeUnmatched(u, s)).join('; ')}: ` +
      `every row would lack it; fix the mapping's path, or run with --force to sync anyway`,
  };
}
