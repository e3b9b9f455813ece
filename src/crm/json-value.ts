/**
 * `JSON.parse` for one export record, except that string values are never
 * internalized.
 *
 * V8's `JSON.parse` puts short string values in its string table: on Node 20,
 * every value of up to 10 characters; on Node 22 and 24 fewer (a 10-digit
 * string no longer, a 5-digit one still). A unique short value per row (a
 * 10-digit HubSpot Record ID) then leaves one old-space string per row until
 * the next mark-compact, and peak RSS climbs by tens of MiB over a long export
 * although nothing is kept.
 * Here string values are slices of the text, like CSV cells, and are
 * collected young.
 *
 * The result is the value `JSON.parse(text)` returns: same types, same key
 * order, duplicate keys last-wins, `__proto__` an own property. Any text this
 * parser does not accept, and any nesting too deep for its recursion, goes to
 * `JSON.parse` itself, which then throws its own message (or, for deep
 * nesting, returns the value). Property-tested against `JSON.parse`.
 */

const TAB = 9;
const NL = 10;
const CR = 13;
const SP = 32;
const DQ = 34;
const PLUS = 43;
const COMMA = 44;
const MINUS = 45;
const DOT = 46;
const ZERO = 48;
const NINE = 57;
const COLON = 58;
const UPPER_E = 69;
const LBRACKET = 91;
const BS = 92;
const RBRACKET = 93;
const LOWER_E = 101;
const LBRACE = 123;
const RBRACE = 125;

/** How many keys of a record `recentKeys` holds. */
const MAX_RECENT_KEYS = 256;

/** Thrown inside the parser; never leaves this module. */
class Rejected extends Error {}
const REJECTED = new Rejected();

let src = '';
let pos = 0;

/**
 * The keys of the previous record, by their order in it. Records of one export
 * share a shape, so a key is usually found here: one comparison with the text
 * instead of a scan and a new string per key (a quarter of the parse time).
 */
const recentKeys: string[] = [];
let keyIndex = 0;

/**
 * The JSON value of `text` (or of `text.slice(start, end)`), as `JSON.parse`
 * would return it. Parsing in place spares a slice of a line out of its chunk.
 */
export function parseJson(text: string, start = 0, end = text.length): unknown {
  src = text;
  pos = start;
  keyIndex = 0;
  try {
    const value = parseValue();
    // pos only moves forward, so a value that ends by `end` used nothing
    // past it; only whitespace may follow, up to `end` exactly.
    while (pos < end && isSpace(src.charCodeAt(pos))) pos++;
    if (pos !== end) throw REJECTED;
    return value;
  } catch {
    // Not JSON (JSON.parse throws the message users know), or nested deeper
    // than this recursion goes (JSON.parse has no such limit).
    return JSON.parse(
      start === 0 && end === text.length ? text : text.slice(start, end),
    ) as unknown;
  } finally {
    src = '';
  }
}

function isSpace(c: number): boolean {
  return c === SP || c === NL || c === CR || c === TAB;
}

function skipSpace(): void {
  while (isSpace(src.charCodeAt(pos))) pos++;
}

function parseValue(): unknown {
  skipSpace();
  const c = src.charCodeAt(pos);
  if (c === DQ) return parseString();
  if (c === LBRACE) return parseObject();
  if (c === LBRACKET) return parseArray();
  if (c === MINUS || (c >= ZERO && c <= NINE)) return parseNumber();
  if (src.startsWith('true', pos)) {
    pos += 4;
    return true;
  }
  if (src.startsWith('false', pos)) {
    pos += 5;
    return false;
  }
  if (src.startsWith('null', pos)) {
    pos += 4;
    return null;
  }
  throw REJECTED;
}

function parseObject(): Record<string, unknown> {
  const obj: Record<string, unknown> = {};
  pos++;
  skipSpace();
  if (src.charCodeAt(pos) === RBRACE) {
    pos++;
    return obj;
  }
  for (;;) {
    if (src.charCodeAt(pos) !== DQ) throw REJECTED;
    const key = parseKey();
    skipSpace();
    if (src.charCodeAt(pos) !== COLON) throw REJECTED;
    pos++;
    const value = parseValue();
    if (key === '__proto__') {
      Object.defineProperty(obj, key, {
        value,
        writable: true,
        enumerable: true,
        configurable: true,
      });
    } else {
      obj[key] = value;
    }
    skipSpace();
    const c = src.charCodeAt(pos++);
    if (c === RBRACE) return obj;
    if (c !== COMMA) throw REJECTED;
    skipSpace();
  }
}

function parseArray(): unknown[] {
  const arr: unknown[] = [];
  pos++;
  skipSpace();
  if (src.charCodeAt(pos) === RBRACKET) {
    pos++;
    return arr;
  }
  for (;;) {
    arr.push(parseValue());
    skipSpace();
    const c = src.charCodeAt(pos++);
    if (c === RBRACKET) return arr;
    if (c !== COMMA) throw REJECTED;
  }
}

/** At the opening quote of a key. */
function parseKey(): string {
  const i = keyIndex++;
  const recent = recentKeys[i];
  if (recent !== undefined) {
    const end = pos + 1 + recent.length;
    if (src.charCodeAt(end) === DQ && src.startsWith(recent, pos + 1)) {
      pos = end + 1;
      return recent;
    }
  }
  const start = pos;
  const key = parseString();
  // Only a key written without escapes can be matched against the text.
  if (i < MAX_RECENT_KEYS && key.length === pos - start - 2) recentKeys[i] = key;
  return key;
}

/** A run of string characters that need no decoding (JSON forbids raw control characters). */
// eslint-disable-next-line no-control-regex
const PLAIN = /[^"\\\x00-\x1f]*/y;

/** At the opening quote. */
function parseString(): string {
  const start = pos + 1;
  PLAIN.lastIndex = start;
  PLAIN.test(src);
  pos = PLAIN.lastIndex;
  const c = src.charCodeAt(pos);
  if (c === DQ) return src.slice(start, pos++);
  if (c === BS) return parseEscapedString(start);
  // A raw control character, or the end of the text.
  throw REJECTED;
}

/** The rest of a string from its first backslash (at `pos`). */
function parseEscapedString(start: number): string {
  let out = '';
  let from = start;
  for (;;) {
    const c = src.charCodeAt(pos);
    if (c === DQ) {
      out += src.slice(from, pos++);
      return out;
    }
    if (c === BS) {
      out += src.slice(from, pos);
      out += escapeAt(pos + 1);
      from = pos;
      continue;
    }
    if (!(c >= SP)) throw REJECTED;
    pos++;
  }
}

/** The character an escape stands for; `at` is just after the backslash. Moves `pos` past it. */
function escapeAt(at: number): string {
  const c = src.charCodeAt(at);
  pos = at + 1;
  switch (c) {
    case DQ:
      return '"';
    case BS:
      return '\\';
    case 47:
      return '/';
    case 98:
      return '\b';
    case 102:
      return '\f';
    case 110:
      return '\n';
    case 114:
      return '\r';
    case 116:
      return '\t';
    case 117: {
      let code = 0;
      for (let k = 0; k < 4; k++) {
        const h = src.charCodeAt(pos++);
        const d =
          h >= ZERO && h <= NINE
            ? h - ZERO
            : h >= 97 && h <= 102
              ? h - 87
              : h >= 65 && h <= 70
                ? h - 55
                : -1;
        if (d < 0) throw REJECTED;
        code = code * 16 + d;
      }
      return String.fromCharCode(code);
    }
    default:
      throw REJECTED;
  }
}

/** JSON's number grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
function parseNumber(): number {
  const start = pos;
  let c = src.charCodeAt(pos);
  if (c === MINUS) c = src.charCodeAt(++pos);
  if (c === ZERO) c = src.charCodeAt(++pos);
  else if (c >= ZERO + 1 && c <= NINE) c = skipDigits();
  else throw REJECTED;
  if (c === DOT) {
    pos++;
    if (!isDigit(src.charCodeAt(pos))) throw REJECTED;
    c = skipDigits();
  }
  if (c === LOWER_E || c === UPPER_E) {
    c = src.charCodeAt(++pos);
    if (c === PLUS || c === MINUS) c = src.charCodeAt(++pos);
    if (!isDigit(c)) throw REJECTED;
    skipDigits();
  }
  return Number(src.slice(start, pos));
}

function isDigit(c: number): boolean {
  return c >= ZERO && c <= NINE;
}

/** Moves past a run of digits; the code after it. */
function skipDigits(): number {
  let c = src.charCodeAt(pos);
  while (c >= ZERO && c <= NINE) c = src.charCodeAt(++pos);
  return c;
}
