/**
 * A JSON export streamed with bounded memory: a top-level array of records,
 * or an object holding that array (HubSpot's `{"results": [...], "paging":
 * {...}}`). A small incremental tokenizer tracks strings, escapes and depth,
 * finds each element of the target array and hands that element alone to
 * `parseRecord` (as NDJSON lines are), parsed in place in its chunk; nothing
 * else is kept. Each row carries the line where its element starts.
 *
 * The target array is `recordsPath` (dotted keys from the top-level object)
 * when given, else the top-level array, else the first key among `results`,
 * `records`, `data`, `items` (in document order) whose value is an array.
 * An element that is not an object, or not valid JSON, or that holds bytes
 * that were not UTF-8, is a problem row (one with such bytes is read as
 * Windows-1252, with a warning, when the decoder kept them: `source.encoding:
 * auto`); a broken structure (truncated file,
 * mismatched brackets), or bytes that were not UTF-8 outside the records, is
 * a SourceError.
 */
import type { SourceRow } from './row.js';
import type { Envelope } from './envelope.js';
import { HeldRecord, overBytes, readRecord, withWarning } from './ndjson.js';
import { SourceError } from './source-error.js';
import { NotUtf8Marks, notUtf8Problem, type NotUtf8 } from './utf8.js';
import { asWindows1252, windows1252Warning } from './windows-1252-rows.js';

export const DEFAULT_RECORD_KEYS: readonly string[] = ['results', 'records', 'data', 'items'];

export interface JsonOptions {
  source: string;
  recordsPath?: string;
  maxRecordBytes: number;
  /** Where each element's record is (`stream`, `recordPath`); the element is the record when none. */
  envelope?: Envelope;
}

const NL = 10;
const CR = 13;
const TAB = 9;
const SP = 32;
const DQ = 34;
const BS = 92;
const COMMA = 44;
const COLON = 58;
const LBRACE = 123;
const RBRACE = 125;
const LBRACKET = 91;
const RBRACKET = 93;

/** Longest key the navigation keeps; longer strings cannot name the records. */
const MAX_KEY = 4096;

export class JsonArrayParser {
  /** Physical line of the scan position (1-based). */
  line = 1;
  private readonly opts: JsonOptions;
  private readonly path: readonly string[] | undefined;
  private readonly stack: number[] = [];
  private readonly keys: (string | undefined)[] = [];
  private inString = false;
  private escapeNext = false;
  private topSeen = false;
  private topDone = false;
  private targetDepth = -1;
  private targetDone = false;
  private afterComma = false;
  // The string being read, when it may be a key on the way to the target.
  private capturing = false;
  private keyRaw = '';
  private lastString: string | undefined;
  // The element being read.
  private elemActive = false;
  private elemStart = 0;
  private readonly elemHeld: HeldRecord;
  private elemLine = 0;
  private openLine = 0;
  // Offsets in the whole text: of the chunk being read, and of the element's start.
  private base = 0;
  private elemAt = 0;
  /** Keyed by offset in the whole text: records may share a line. */
  private readonly notUtf8 = new NotUtf8Marks();

  constructor(opts: JsonOptions) {
    this.opts = opts;
    this.path = opts.recordsPath?.split('.');
    this.elemHeld = new HeldRecord(opts.maxRecordBytes);
  }

  push(text: string, out: SourceRow[], notUtf8?: readonly NotUtf8[]): void {
    if (notUtf8)
      for (const m of notUtf8) this.notUtf8.add(this.base + m.index, m.offset, m.kept === true);
    const n = text.length;
    let i = 0;
    let keyFrom = 0;
    if (this.elemActive) this.elemStart = 0;
    while (i < n) {
      if (this.inString) {
        if (this.escapeNext) {
          this.escapeNext = false;
          i++;
          continue;
        }
        const j = text.indexOf('"', i);
        if (j < 0) {
          let b = 0;
          for (let k = n - 1; k >= i && text.charCodeAt(k) === BS; k--) b++;
          this.escapeNext = b % 2 === 1;
          if (this.capturing) this.captureKey(text, keyFrom, n);
          i = n;
          break;
        }
        let b = 0;
        for (let k = j - 1; k >= i && text.charCodeAt(k) === BS; k--) b++;
        if (b % 2 === 1) {
          i = j + 1;
          continue;
        }
        this.inString = false;
        if (this.capturing) {
          this.captureKey(text, keyFrom, j);
          this.capturing = false;
          this.lastString = this.decodeKey();
        }
        i = j + 1;
        continue;
      }
      const c = text.charCodeAt(i);
      if (c === SP || c === NL || c === CR || c === TAB) {
        if (c === NL) this.line++;
        i++;
        continue;
      }
      const depth = this.stack.length;
      if (depth === 0) this.topLevel(c);
      if (depth === this.targetDepth && c !== COMMA && c !== RBRACKET && !this.elemActive) {
        this.elemActive = true;
        this.elemStart = i;
        this.elemAt = this.base + i;
        this.elemLine = this.line;
        this.afterComma = false;
      }
      switch (c) {
        case DQ:
          this.inString = true;
          if (this.mayBeKey(depth)) {
            this.capturing = true;
            this.keyRaw = '';
            keyFrom = i + 1;
          }
          break;
        case LBRACE:
        case LBRACKET:
          if (c === LBRACKET && this.isTarget(depth)) {
            this.targetDepth = depth + 1;
            this.afterComma = false;
          }
          if (depth === 0) this.openLine = this.line;
          this.stack.push(c);
          this.keys[depth + 1] = undefined;
          break;
        case RBRACE:
        case RBRACKET: {
          const open = this.stack[depth - 1];
          if (open !== (c === RBRACE ? LBRACE : LBRACKET)) {
            this.fail(`unexpected '${String.fromCharCode(c)}'`);
          }
          if (depth === this.targetDepth) {
            if (this.elemActive) this.endElement(text, i, out);
            else if (this.afterComma) this.fail("a ',' before ']' (trailing comma)");
            this.targetDepth = -1;
            this.targetDone = true;
          }
          this.stack.pop();
          if (depth === 1) this.topDone = true;
          break;
        }
        case COMMA:
          if (depth === this.targetDepth) {
            if (!this.elemActive) this.fail("unexpected ','");
            this.endElement(text, i, out);
            this.afterComma = true;
          }
          break;
        case COLON:
          if (this.stack[depth - 1] === LBRACE) {
            this.keys[depth] = this.lastString;
            this.lastString = undefined;
          }
          break;
      }
      i++;
    }
    if (this.elemActive) this.elemHeld.add(text.slice(this.elemStart));
    this.base += n;
  }

  /** Checks that the file ended where it should; every row was emitted by `push`. */
  end(_out: SourceRow[]): void {
    const source = this.opts.source;
    this.outsideRecords(this.elemActive ? this.elemAt : Infinity);
    if (!this.topSeen)
      throw new SourceError('source.empty', 'empty export: no JSON value', { source });
    if (this.stack.length > 0 || this.inString) {
      const line = this.elemActive ? this.elemLine : this.line;
      const what = this.elemActive
        ? 'the record starting here is cut short'
        : `the JSON opened at line ${this.openLine} is not closed`;
      throw new SourceError(
        'source.json',
        `unexpected end of the file: ${what} (truncated export?)`,
        {
          source,
          line,
        },
      );
    }
    if (!this.targetDone) {
      const where = this.path
        ? `nothing at recordsPath "${this.path.join('.')}" is an array`
        : `the top-level object has no array under ${DEFAULT_RECORD_KEYS.join(', ')} (set recordsPath)`;
      throw new SourceError('source.json', `not an array of records: ${where}`, { source });
    }
  }

  private topLevel(c: number): void {
    if (this.topDone) this.fail('unexpected text after the end of the JSON value');
    if (this.topSeen) return;
    this.topSeen = true;
    if (c === LBRACKET && this.path !== undefined) {
      this.fail(`not an object: recordsPath "${this.path.join('.')}" needs a top-level object`);
    }
    if (c !== LBRACE && c !== LBRACKET) {
      const kind =
        c === DQ
          ? 'a string'
          : c === 116 || c === 102
            ? 'a boolean'
            : c === 110
              ? 'null'
              : 'a number';
      this.fail(`not an array of records: the export is ${kind}`);
    }
  }

  private isTarget(depth: number): boolean {
    if (this.targetDone || this.targetDepth >= 0) return false;
    const path = this.path;
    if (path === undefined) {
      if (depth === 0) return true;
      return depth === 1 && DEFAULT_RECORD_KEYS.includes(this.keys[1] ?? '');
    }
    if (depth !== path.length) return false;
    for (let d = 1; d <= depth; d++) {
      if (this.stack[d - 1] !== LBRACE || this.keys[d] !== path[d - 1]) return false;
    }
    return true;
  }

  private mayBeKey(depth: number): boolean {
    return (
      this.targetDepth < 0 &&
      !this.targetDone &&
      this.stack[depth - 1] === LBRACE &&
      depth <= (this.path?.length ?? 1)
    );
  }

  private captureKey(text: string, from: number, to: number): void {
    if (this.keyRaw.length <= MAX_KEY)
      this.keyRaw += text.slice(from, Math.min(to, from + MAX_KEY + 1));
  }

  private decodeKey(): string | undefined {
    if (this.keyRaw.length > MAX_KEY) return undefined;
    try {
      return JSON.parse(`"${this.keyRaw}"`) as string;
    } catch {
      return undefined;
    }
  }

  private endElement(text: string, end: number, out: SourceRow[]): void {
    const line = this.elemLine;
    let bad: number | undefined;
    if (this.notUtf8.next < this.base + end) {
      this.outsideRecords(this.elemAt);
      bad = this.notUtf8.take(this.base + end - 1);
    }
    // An element inside the chunk is parsed in place; one begun in an earlier chunk is joined first.
    let body = text;
    let from = this.elemStart;
    let to = end;
    if (this.elemHeld.held) {
      this.elemHeld.add(text.slice(this.elemStart, end));
      body = this.elemHeld.text;
      from = 0;
      to = body.length;
    }
    const oversized =
      this.elemHeld.oversized || overBytes(body, from, to, this.opts.maxRecordBytes);
    this.elemActive = false;
    this.elemHeld.reset();
    let warning: string | undefined;
    if (bad !== undefined) {
      if (!this.notUtf8.kept) {
        out.push({ line, problem: notUtf8Problem(bad) });
        return;
      }
      // source.encoding auto: the record is read whole as Windows-1252.
      body = asWindows1252(body.slice(from, to));
      from = 0;
      to = body.length;
      warning = windows1252Warning(bad);
    }
    if (oversized) {
      out.push({
        line,
        problem: `record is larger than maxRecordBytes (${this.opts.maxRecordBytes} bytes)`,
      });
      return;
    }
    const row = readRecord(this.opts.envelope, line, body, from, to);
    if (row !== undefined) out.push(withWarning(row, warning));
  }

  /** Bytes that were not UTF-8 before `offset` and in no record: the structure itself is broken. */
  private outsideRecords(offset: number): void {
    if (this.notUtf8.next >= offset) return;
    const bad = this.notUtf8.take(this.notUtf8.next) ?? 0;
    throw new SourceError('source.encoding', notUtf8Problem(bad, 'outside the records'), {
      source: this.opts.source,
    });
  }

  private fail(detail: string): never {
    throw new SourceError('source.json', detail, { source: this.opts.source, line: this.line });
  }
}
