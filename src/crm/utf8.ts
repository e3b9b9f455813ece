/**
 * UTF-8 that costs the row, not the file: bytes that do not decode become
 * U+FFFD in the text, and each such sequence is reported with its place in
 * the text and its byte offset in the export, so that the reader can make
 * the row holding it a problem row and read every other row. With `keep`
 * (`source.encoding: auto`) each byte of such a sequence stays in the text
 * as itself instead (one U+DC80-U+DCFF each, windows-1252-rows.ts), so that
 * the row holding it can be read again whole as Windows-1252.
 *
 * Clean text takes the fast path: one strict streaming `TextDecoder` per
 * chunk, as before. Only a chunk the strict decoder refuses is split at its
 * bad sequences here. A bad sequence is what the WHATWG decoder replaces with
 * one U+FFFD (a lead byte and the continuation bytes that were valid before
 * the fault), so the text is exactly what `new TextDecoder('utf-8')` gives.
 */

/** A sequence of bytes that is not UTF-8, standing as one U+FFFD in the text. */
export interface NotUtf8 {
  /** Index of its U+FFFD in the text it came with. */
  index: number;
  /** Offset of its first byte in the export, from 0 (in the bytes after gzip). */
  offset: number;
  /** Its bytes are kept in the text (`keep`), one character each from `index` on, not one U+FFFD. */
  kept?: true;
}

/** A chunk of decoded text, with the bad sequences in it, if any. */
export interface Decoded {
  text: string;
  notUtf8?: NotUtf8[];
}

const PROBLEM = 'not UTF-8 at byte ';

/** The reason a row with bytes that are not UTF-8 is not read; `where` adds to the place. */
export function notUtf8Problem(offset: number, where?: string): string {
  const place = where === undefined ? '' : `, ${where}`;
  return `${PROBLEM}${offset} of the export${place}; set source.encoding if the export is Windows-1252`;
}

/** Whether a row's problem is bytes that are not UTF-8 (for the invalid-rows threshold). */
export function isNotUtf8Problem(problem: string): boolean {
  return problem.startsWith(PROBLEM);
}

const EMPTY = new Uint8Array(0);

/** A byte that is not UTF-8, kept in the text: a lone low surrogate, which no decoded text holds. */
export const KEPT_BYTE_BASE = 0xdc00;

function keptBytes(b: Uint8Array, at: number, length: number): string {
  let s = '';
  for (let k = at; k < at + length; k++) s += String.fromCharCode(KEPT_BYTE_BASE | b[k]!);
  return s;
}

/** Range of the first continuation byte after lead `c` (the others are 80-BF). */
function firstContinuation(c: number): [number, number] {
  if (c === 0xe0) return [0xa0, 0xbf]; // no overlong 3-byte forms
  if (c === 0xed) return [0x80, 0x9f]; // no surrogates
  if (c === 0xf0) return [0x90, 0xbf]; // no overlong 4-byte forms
  if (c === 0xf4) return [0x80, 0x8f]; // nothing above U+10FFFF
  return [0x80, 0xbf];
}

/** Continuation bytes lead byte `c` needs: 0 for ASCII, -1 when it cannot start a character. */
function continuations(c: number): number {
  if (c < 0x80) return 0;
  if (c >= 0xc2 && c <= 0xdf) return 1;
  if (c >= 0xe0 && c <= 0xef) return 2;
  if (c >= 0xf0 && c <= 0xf4) return 3;
  return -1;
}

/**
 * The first sequence of `b` from `from` on that is not UTF-8: where it starts
 * and how many bytes it spans. A character cut short by the end of `b` is
 * bad only when `final` (otherwise the next chunk may complete it).
 */
export function findNotUtf8(
  b: Uint8Array,
  from: number,
  final: boolean,
): { at: number; length: number } | undefined {
  const n = b.length;
  let i = from;
  while (i < n) {
    const c = b[i]!;
    if (c < 0x80) {
      i++;
      continue;
    }
    const need = continuations(c);
    if (need < 0) return { at: i, length: 1 };
    let [lo, hi] = firstContinuation(c);
    for (let k = 1; k <= need; k++) {
      if (i + k >= n) return final ? { at: i, length: k } : undefined;
      const d = b[i + k]!;
      if (d < lo || d > hi) return { at: i, length: k };
      lo = 0x80;
      hi = 0xbf;
    }
    i += need + 1;
  }
  return undefined;
}

/**
 * Where a character that is valid so far but not complete starts at the end
 * of `b` (what a streaming decoder holds back), or `b.length` when none does.
 */
export function unfinishedStart(b: Uint8Array): number {
  const n = b.length;
  for (let k = 1; k <= 3 && k <= n; k++) {
    const c = b[n - k]!;
    if ((c & 0xc0) === 0x80) continue;
    if (continuations(c) < k) return n;
    const [lo, hi] = firstContinuation(c);
    if (k > 1 && (b[n - k + 1]! < lo || b[n - k + 1]! > hi)) return n;
    return n - k;
  }
  return n;
}

/**
 * Streaming UTF-8 decoding where bad bytes are marked, not fatal. `decode`
 * takes the chunks in order, then an empty final one; a chunk may be reused
 * by its producer after the call. `keep`: bad bytes stay in the text as
 * themselves (KEPT_BYTE_BASE + byte), not as U+FFFD.
 */
export class Utf8Decoder {
  private readonly keep: boolean;
  private decoder = new TextDecoder('utf-8', { fatal: true });
  /** The start of a character that the decoder holds from earlier chunks (up to 3 bytes, copied). */
  private held: Uint8Array = EMPTY;
  /** Bytes taken so far. */
  private taken = 0;

  constructor(opts: { keep?: boolean } = {}) {
    this.keep = opts.keep === true;
  }

  decode(chunk: Uint8Array, final: boolean): Decoded {
    let text: string;
    try {
      text = this.decoder.decode(chunk, { stream: !final });
    } catch {
      return this.recover(chunk, final);
    }
    this.take(chunk, chunk.length >= 3 ? chunk : concat(this.held, chunk), final);
    return { text };
  }

  /** The chunk the strict decoder refused, decoded piece by piece around its bad sequences. */
  private recover(chunk: Uint8Array, final: boolean): Decoded {
    const bytes = this.held.length === 0 ? chunk : concat(this.held, chunk);
    const base = this.taken - this.held.length;
    // The BOM is stripped here by hand: a decoder that starts mid-stream must not strip U+FEFF.
    let i = base === 0 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
    const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
    const parts: string[] = [];
    const notUtf8: NotUtf8[] = [];
    let length = 0;
    for (let bad = findNotUtf8(bytes, i, final); bad; bad = findNotUtf8(bytes, i, final)) {
      // Whole characters only: nothing is held back between the pieces.
      const piece = decoder.decode(bytes.subarray(i, bad.at), { stream: true });
      length += piece.length;
      if (this.keep) {
        parts.push(piece, keptBytes(bytes, bad.at, bad.length));
        notUtf8.push({ index: length, offset: base + bad.at, kept: true });
        length += bad.length;
      } else {
        parts.push(piece, '\uFFFD');
        notUtf8.push({ index: length, offset: base + bad.at });
        length++;
      }
      i = bad.at + bad.length;
    }
    parts.push(decoder.decode(bytes.subarray(i), { stream: !final }));
    this.decoder = decoder;
    this.take(chunk, bytes, final);
    return { text: parts.join(''), notUtf8 };
  }

  /** `tail` ends with the chunk and holds any character begun before it. */
  private take(chunk: Uint8Array, tail: Uint8Array, final: boolean): void {
    this.taken += chunk.length;
    const start = final ? tail.length : unfinishedStart(tail);
    // Copied (`new Uint8Array` copies; a Buffer's `slice` would not).
    this.held = start === tail.length ? EMPTY : new Uint8Array(tail.subarray(start));
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (a.length === 0) return b;
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

/**
 * Bad sequences waiting for the row they fall in, in order, each keyed by its
 * position: its line (CSV, NDJSON: a row is whole lines) or its offset in the
 * text (JSON: records may share a line). Parsers compare with `next` per row,
 * which is all clean text costs.
 */
export class NotUtf8Marks {
  /** Position of the first waiting mark; Infinity when none waits. */
  next = Infinity;
  /** Whether the marks `take` dropped last had their bytes kept in the text (NotUtf8's `kept`). */
  kept = false;
  private keys: number[] = [];
  private offsets: number[] = [];
  private keptFlags: boolean[] = [];
  private head = 0;

  add(key: number, offset: number, kept = false): void {
    this.keys.push(key);
    this.offsets.push(offset);
    this.keptFlags.push(kept);
    this.next = this.keys[this.head]!;
  }

  /** Marks each bad sequence of `text` with its line; `firstLine` is the line of `text[0]`. */
  addLines(text: string, firstLine: number, notUtf8: readonly NotUtf8[]): void {
    let line = firstLine;
    let nl = text.indexOf('\n');
    for (const m of notUtf8) {
      while (nl >= 0 && nl < m.index) {
        line++;
        nl = text.indexOf('\n', nl + 1);
      }
      this.add(line, m.offset, m.kept === true);
    }
  }

  /**
   * The byte offset of the first mark at or before `upTo`, dropping every
   * such mark; `kept` then says whether its bytes are kept in the text.
   */
  take(upTo: number): number | undefined {
    if (this.next > upTo) return undefined;
    const offset = this.offsets[this.head]!;
    this.kept = this.keptFlags[this.head]!;
    while (this.head < this.keys.length && this.keys[this.head]! <= upTo) this.head++;
    if (this.head === this.keys.length) {
      this.keys = [];
      this.offsets = [];
      this.keptFlags = [];
      this.head = 0;
      this.next = Infinity;
    } else this.next = this.keys[this.head]!;
    return offset;
  }
}
