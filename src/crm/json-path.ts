/**
 * The path grammar of a mapping's `from` and `{placeholder}`, for JSON
 * records and JSON-valued CSV cells, and its evaluation. Pure: no I/O, no
 * state. The grammar (docs/MAPPING.md, "Paths"):
 *
 *   path     = first *( "." name | "." digits | "[" digits "]" | "[*]" | "[" quoted "]" )
 *   first    = name | "[" quoted "]"
 *   name     = one or more characters other than . [ ]
 *   quoted   = "…" or '…'; inside, \ takes the next character as it is
 *
 * `a[0]` and `a.0` mean the same: item 0 of a list (on an object, its key
 * "0"). `[*]` takes every item of a list; on any other present value, that
 * value as a list of one (APIs that send a single item bare). A path with
 * `[*]` gives a list of what it found, nulls left out, or nothing when it
 * found nothing. Keys are read only as own properties: `__proto__` and
 * `constructor` never reach the prototype.
 */

/** Takes every item of a list. */
export const ALL = Symbol('[*]');

/** A key of an object; an index, which reads item `index` of a list or key `key` of an object; or `[*]`. */
export type Segment = { key: string } | { index: number; key: string } | typeof ALL;

export interface JsonPath {
  /** The text as written (trimmed). */
  text: string;
  /** The first is always a key. */
  segments: Segment[];
  /** Has a `[*]`: evaluates to a list. */
  multi: boolean;
}

/** Why a text is not a path, e.g. `unclosed [ at character 12`. */
export class PathSyntax {
  constructor(readonly reason: string) {}
}

const DIGITS = /^\d+$/;

function indexSegment(text: string): Segment {
  return { index: Number(text), key: text };
}

/** Parses a path; a `PathSyntax` says why the text is not one. */
export function parsePath(input: string): JsonPath | PathSyntax {
  const text = input.trim();
  const segments: Segment[] = [];
  let multi = false;
  let i = 0;
  const at = (n: number) => `at character ${n + 1}`;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '[') {
      const q = text[i + 1];
      if (q === '"' || q === "'") {
        let key = '';
        let j = i + 2;
        for (; j < text.length && text[j] !== q; j++) {
          if (text[j] === '\\') j++;
          if (j < text.length) key += text[j];
        }
        if (j >= text.length) return new PathSyntax(`unclosed quote ${at(i + 1)}`);
        if (text[j + 1] !== ']') return new PathSyntax(`expected ] ${at(j + 1)}`);
        segments.push({ key });
        i = j + 2;
      } else {
        const end = text.indexOf(']', i);
        if (end < 0) return new PathSyntax(`unclosed [ ${at(i)}`);
        const inner = text.slice(i + 1, end).trim();
        if (segments.length === 0)
          return new PathSyntax(`a path starts with a name or ["quoted name"], not [${inner}]`);
        if (inner === '*') {
          segments.push(ALL);
          multi = true;
        } else if (DIGITS.test(inner)) segments.push(indexSegment(inner));
        else
          return new PathSyntax(
            `[${inner}] ${at(i)}: write [N] for an item, [*] for all, ["name"] for a key`,
          );
        i = end + 1;
      }
    } else {
      if (segments.length > 0) {
        if (c !== '.') return new PathSyntax(`expected . or [ ${at(i)}`);
        i++;
      }
      let j = i;
      while (j < text.length && text[j] !== '.' && text[j] !== '[' && text[j] !== ']') j++;
      const name = text.slice(i, j);
      if (name === '') return new PathSyntax(`empty name ${at(i)}`);
      segments.push(segments.length > 0 && DIGITS.test(name) ? indexSegment(name) : { key: name });
      i = j;
    }
  }
  if (segments.length === 0) return new PathSyntax('empty path');
  return { text, segments, multi };
}

/** The own property `key` of an object (never of a list: `length` is not data). */
export function ownKey(value: unknown, key: string): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  return Object.hasOwn(value, key) ? (value as Record<string, unknown>)[key] : undefined;
}

function step(value: unknown, seg: Exclude<Segment, typeof ALL>): unknown {
  if ('index' in seg && Array.isArray(value)) return value[seg.index];
  return ownKey(value, seg.key);
}

/**
 * Evaluates `segments[from…]` on `value`. Without `[*]`: the value found, or
 * undefined. With: the list of values found (nulls left out), or undefined
 * when empty.
 */
export function evaluate(segments: readonly Segment[], value: unknown, from = 0): unknown {
  let v = value;
  for (let i = from; i < segments.length; i++) {
    const seg = segments[i]!;
    if (seg === ALL) {
      if (v === undefined || v === null) return undefined;
      const out: unknown[] = [];
      for (const item of Array.isArray(v) ? v : [v]) {
        const found = evaluate(segments, item, i + 1);
        if (found === undefined || found === null) continue;
        // A later [*] gave a list of its own: one flat list.
        if (Array.isArray(found) && segments.indexOf(ALL, i + 1) >= 0) out.push(...found);
        else out.push(found);
      }
      return out.length > 0 ? out : undefined;
    }
    v = step(v, seg);
    if (v === undefined) return undefined;
  }
  return v;
}

/** Where and why a path found nothing in one value. */
export interface Miss {
  /** Index of the segment that found nothing. */
  depth: number;
  /** The value that segment was applied to. */
  at: unknown;
}

/** Why `segments[from…]` found nothing in `value` (the deepest miss over `[*]` items), or null when it found something. */
export function explainMiss(segments: readonly Segment[], value: unknown, from = 0): Miss | null {
  let v = value;
  for (let i = from; i < segments.length; i++) {
    const seg = segments[i]!;
    if (seg === ALL) {
      if (v === undefined || v === null) return { depth: i, at: v };
      let deepest: Miss = { depth: i, at: v };
      for (const item of Array.isArray(v) ? v : [v]) {
        const m = explainMiss(segments, item, i + 1);
        if (m === null) return null;
        if (m.depth > deepest.depth) deepest = m;
      }
      return deepest;
    }
    const next = step(v, seg);
    if (next === undefined || (next === null && i < segments.length - 1)) {
      return next === null ? { depth: i + 1, at: null } : { depth: i, at: v };
    }
    v = next;
  }
  return null;
}

/** The text of `segments[0…end)`, in the grammar's own notation. */
export function formatSegments(segments: readonly Segment[], end = segments.length): string {
  let out = '';
  for (let i = 0; i < end; i++) {
    const seg = segments[i]!;
    if (seg === ALL) out += '[*]';
    else if ('index' in seg) out += `[${seg.key}]`;
    else if (/^[^.[\]]+$/.test(seg.key) && !DIGITS.test(seg.key))
      out += i === 0 ? seg.key : `.${seg.key}`;
    else out += `[${JSON.stringify(seg.key)}]`;
  }
  return out;
}
