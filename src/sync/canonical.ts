/**
 * Canonical JSON: one spelling per value, so that equal bodies hash equal
 * whatever the key order of the object that produced them. Object keys are
 * sorted (by UTF-16 code units, as `Array.prototype.sort` does), no
 * whitespace, `undefined` members are dropped (as JSON.stringify drops them),
 * `null` is kept, numbers and strings are written exactly as JSON.stringify
 * writes them. Arrays keep their order (order is data there).
 */

/** The canonical JSON text of `value`. `undefined` at the top level gives `'null'`. */
export function canonicalJson(value: unknown): string {
  return write(value) ?? 'null';
}

// Returns undefined for values JSON leaves out of objects (undefined, functions, symbols).
function write(value: unknown): string | undefined {
  switch (typeof value) {
    case 'string':
      return quoted(value);
    case 'number':
      // JSON.stringify writes NaN and ±Infinity as null; so do we.
      return Number.isFinite(value) ? String(value) : 'null';
    case 'boolean':
      return value ? 'true' : 'false';
    case 'bigint':
      // JSON.stringify throws on bigint; a body never holds one (zod refuses it),
      // but a hash must not crash the run on a caller's mistake: write it as a number.
      return value.toString();
    case 'object':
      if (value === null) return 'null';
      if (Array.isArray(value)) return writeArray(value);
      if (typeof (value as { toJSON?: unknown }).toJSON === 'function') {
        return write((value as { toJSON(): unknown }).toJSON());
      }
      return writeObject(value as Record<string, unknown>);
    default:
      return undefined;
  }
}

function writeArray(items: readonly unknown[]): string {
  let out = '[';
  for (let i = 0; i < items.length; i++) {
    if (i > 0) out += ',';
    out += write(items[i]) ?? 'null';
  }
  return out + ']';
}

function writeObject(obj: Record<string, unknown>): string {
  const keys = Object.keys(obj);
  const { order, names } = keyOrder(keys);
  let out = '{';
  let first = true;
  for (let j = 0; j < order.length; j++) {
    const v = write(obj[keys[order[j]!]!]);
    if (v === undefined) continue;
    if (!first) out += ',';
    first = false;
    out += names[j]! + v;
  }
  return out + '}';
}

// What JSON.stringify escapes in a string: `"`, `\`, control characters and
// (lone) surrogates. A string with none of them is itself between quotes.
// eslint-disable-next-line no-control-regex
const ESCAPED = /["\\\u0000-\u001f\ud800-\udfff]/;

/** `JSON.stringify(s)`, without its cost for the common string that needs no escape. */
function quoted(s: string): string {
  return ESCAPED.test(s) ? JSON.stringify(s) : `"${s}"`;
}

/** A key set in `Object.keys` order, its keys' positions in sorted order, and their written names. */
interface KeyOrder {
  keys: readonly string[];
  order: number[];
  /** `"key":` of each key, in sorted order. */
  names: string[];
}

// The key sets written last, most recent first: the bodies of one mapping
// have a few, so an object's keys are compared, not sorted and quoted again.
const RECENT_ORDERS = 8;
const recent: KeyOrder[] = [];

function keyOrder(keys: readonly string[]): KeyOrder {
  for (const o of recent) if (sameKeys(o.keys, keys)) return o;
  // By UTF-16 code units, as Array.prototype.sort compares strings; keys are distinct.
  const order = keys.map((_, i) => i).sort((a, b) => (keys[a]! < keys[b]! ? -1 : 1));
  const o = { keys, order, names: order.map((i) => `${quoted(keys[i]!)}:`) };
  recent.unshift(o);
  if (recent.length > RECENT_ORDERS) recent.pop();
  return o;
}

function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
