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
      return JSON.stringify(value);
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
  const keys = Object.keys(obj).sort();
  let out = '{';
  let first = true;
  for (const k of keys) {
    const v = write(obj[k]);
    if (v === undefined) continue;
    if (!first) out += ',';
    first = false;
    out += JSON.stringify(k) + ':' + v;
  }
  return out + '}';
}
