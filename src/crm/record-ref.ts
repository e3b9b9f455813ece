/**
 * What a mapping's `from` or `{placeholder}` names in a source record: a
 * column, else a path (json-path.ts). A column of that exact name wins (CSV
 * headers may hold dots: `Company.Name`); then a column matching
 * case-insensitively after trimming (Data Loader before v61 wrote `NAME`);
 * then the path, whose first name is found the same way and whose rest walks
 * the value there. A column holding JSON text (a CSV `properties` cell with
 * `{"name": …}`) is parsed for the rest of the path, at most once per row.
 */
import { evaluate, explainMiss, parsePath, PathSyntax, type JsonPath } from './json-path.js';

type Rec = Record<string, unknown>;

const PROTO_KEYS = new Set(Object.getOwnPropertyNames(Object.prototype));

/** Where a reference found nothing in one record: `segments[depth]` missed in `at` (depth 0: the column). */
export interface RefMiss {
  depth: number;
  at: unknown;
  /** The column at depth 0 held text that is not JSON, so the path could not go on. */
  notJson?: boolean;
}

export interface RecordRef {
  text: string;
  /** The path, when the text is one of more than a name. */
  path: JsonPath | null;
  /** Why a text that looks like a path (it has `[` or `"`) is not one; it is then a column only. */
  syntax?: string;
  /** The value, `undefined` when the record has nothing there. */
  read(rec: Rec): unknown;
  /** Why `read` found nothing in `rec`, or null when it found something. */
  miss(rec: Rec): RefMiss | null;
}

// The cells parsed for the record being mapped: every reference into the
// same JSON cell of a row shares one parse. Rows are mapped one at a time.
let cellsOf: object | null = null;
const cells = new Map<string, unknown>();

function parsedCell(rec: Rec, column: string, text: string): unknown {
  const c = text.trimStart()[0];
  if (c !== '{' && c !== '[') return undefined;
  if (cellsOf !== rec) {
    cellsOf = rec;
    cells.clear();
  }
  if (cells.has(column)) return cells.get(column);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  cells.set(column, parsed);
  return parsed;
}

/**
 * A record's own enumerable keys, in `Object.keys` order, and the first key
 * of each case-insensitive spelling (trimmed, lower-cased): what a column
 * finder scans for when the exact name is absent. Rows of a CSV share one
 * header, and those of a JSON export mostly a few key sets, so a shape is
 * computed once and then only compared, key by key, with the next record's.
 */
class Shape {
  private folded: Map<string, string> | null = null;
  constructor(readonly keys: readonly string[]) {}

  /** The first key (in `keys` order) that is `wanted` after trimming and lower-casing. */
  fold(wanted: string): string | undefined {
    let m = this.folded;
    if (m === null) {
      m = new Map();
      for (const k of this.keys) {
        const f = k.trim().toLowerCase();
        if (!m.has(f)) m.set(f, k);
      }
      this.folded = m;
    }
    return m.get(wanted);
  }
}

/** Two key lists equal, in order (a record's `Object.keys` against a shape's). */
export function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

// The shapes seen last, most recent first: JSON exports may alternate a few key sets.
const RECENT_SHAPES = 4;
const recent: Shape[] = [];

// The record being mapped (beginRecord … endRecord) and its shape, once known.
let rowRec: object | null = null;
let rowShape: Shape | null = null;

/** The shape of `rec` as it is now: its keys are read again unless `rec` is the record being mapped. */
function shapeOf(rec: Rec): Shape {
  if (rec === rowRec && rowShape !== null) return rowShape;
  const keys = Object.keys(rec);
  let shape: Shape | undefined;
  for (let i = 0; i < recent.length; i++) {
    const s = recent[i]!;
    if (sameKeys(s.keys, keys)) {
      shape = s;
      if (i > 0) {
        recent.splice(i, 1);
        recent.unshift(s);
      }
      break;
    }
  }
  if (shape === undefined) {
    shape = new Shape(keys);
    recent.unshift(shape);
    if (recent.length > RECENT_SHAPES) recent.pop();
  }
  if (rec === rowRec) rowShape = shape;
  return shape;
}

/**
 * Marks `rec` as the record being mapped until `endRecord`: its keys are read
 * once for every reference instead of once per reference. The record must not
 * change in between (mapping never changes it).
 */
function beginRecord(rec: object): void {
  rowRec = rec;
  rowShape = null;
}

function endRecord(): void {
  rowRec = null;
  rowShape = null;
}

/** `fn()` with `rec` as the record being mapped (`beginRecord` … `endRecord`, even on a throw). */
export function readingRecord<T>(rec: object, fn: () => T): T {
  beginRecord(rec);
  try {
    return fn();
  } finally {
    endRecord();
  }
}

/** A column found exactly, else case-insensitively after trimming; the key found is remembered. */
function columnFinder(name: string): (rec: Rec) => string | undefined {
  const risky = PROTO_KEYS.has(name);
  const wanted = name.trim().toLowerCase();
  let hint: string | null = null;
  // The answer of the case-insensitive scan for the last shape looked at.
  let seen: Shape | null = null;
  let found: string | undefined;
  return (rec) => {
    if (risky ? Object.hasOwn(rec, name) : rec[name] !== undefined) return name;
    if (hint !== null && Object.hasOwn(rec, hint)) return hint;
    const shape = shapeOf(rec);
    if (shape !== seen) {
      seen = shape;
      found = shape.fold(wanted);
    }
    if (found !== undefined) hint = found;
    return found;
  };
}

export function compileRef(input: string): RecordRef {
  const parsed = parsePath(input);
  const path = parsed instanceof PathSyntax || parsed.segments.length < 2 ? null : parsed;
  const syntax = parsed instanceof PathSyntax && /[[\]"']/.test(input) ? parsed.reason : undefined;
  // A quoted single name (`["@odata.etag"]`) is a column under another spelling.
  const single =
    !(parsed instanceof PathSyntax) && parsed.segments.length === 1 && input.trim() !== ''
      ? (parsed.segments[0] as { key: string }).key
      : undefined;
  const column = columnFinder(input);
  const quoted = single !== undefined && single !== input ? columnFinder(single) : null;
  const first = path ? columnFinder((path.segments[0] as { key: string }).key) : null;
  let viaPath = false;

  const valueAt = (rec: Rec, find: (rec: Rec) => string | undefined): unknown => {
    const k = find(rec);
    return k === undefined ? undefined : rec[k];
  };
  const walk = (rec: Rec): unknown => {
    const k = first!(rec);
    if (k === undefined) return undefined;
    let v = rec[k];
    if (typeof v === 'string') v = parsedCell(rec, k, v);
    return evaluate(path!.segments, v, 1);
  };
  // Only names such as `constructor` need the slower own-property check.
  const risky = PROTO_KEYS.has(input);
  const read = (rec: Rec): unknown => {
    let v = risky ? (Object.hasOwn(rec, input) ? rec[input] : undefined) : rec[input];
    if (v !== undefined) return v;
    v = valueAt(rec, column);
    if (v !== undefined) return v;
    if (quoted) return valueAt(rec, quoted);
    if (!path) return undefined;
    v = walk(rec);
    if (v !== undefined) viaPath = true;
    return v;
  };
  // Once the path has found something, records are of the JSON kind: skip the
  // scan for a case-insensitive column the name is not (a scan per row).
  const fast = (rec: Rec): unknown => {
    const own = rec[input];
    if (own !== undefined && Object.hasOwn(rec, input)) return own;
    const v = walk(rec);
    return v !== undefined ? v : read(rec);
  };

  return {
    text: input,
    path,
    ...(syntax !== undefined && { syntax }),
    read: (rec) => (viaPath ? fast(rec) : read(rec)),
    miss(rec) {
      if (read(rec) !== undefined) return null;
      if (!path) return { depth: 0, at: rec };
      const k = first!(rec);
      if (k === undefined) return { depth: 0, at: rec };
      const cell = rec[k];
      if (typeof cell === 'string' && parsedCell(rec, k, cell) === undefined) {
        return { depth: 0, at: cell, notJson: true };
      }
      const v = typeof cell === 'string' ? parsedCell(rec, k, cell) : cell;
      return explainMiss(path.segments, v, 1) ?? { depth: path.segments.length, at: undefined };
    },
  };
}
