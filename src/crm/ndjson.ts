/**
 * Newline-delimited JSON: one value per line. A line that is not valid JSON,
 * or not an object, is a problem row with its line number and the file goes
 * on. Blank lines are skipped. A line longer than `maxRecordBytes` is dropped
 * as it streams (memory stays bounded) and reported as a problem row, as is
 * a line with bytes that were not UTF-8.
 * With `recordPath` or `stream` each line is opened as envelope.ts says.
 * Each line is parsed by `parseJson` (json-value.ts), which returns what
 * JSON.parse would but leaves short string values out of V8's string table.
 */
import type { Envelope } from './envelope.js';
import { parseJson } from './json-value.js';
import type { SourceRow } from './row.js';
import { NotUtf8Marks, notUtf8Problem, type NotUtf8 } from './utf8.js';
import { asWindows1252, windows1252Warning } from './windows-1252-rows.js';

export interface NdjsonOptions {
  maxRecordBytes: number;
  /** Where each line's record is (`stream`, `recordPath`); the line is the record when none. */
  envelope?: Envelope;
}

/** Why a parsed JSON value is not a record, or undefined when it is one. */
function notARecord(value: unknown): string | undefined {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) return undefined;
  const kind = value === null ? 'null' : Array.isArray(value) ? 'an array' : `a ${typeof value}`;
  return `not a JSON object (${kind})`;
}

/** JSON.parse's message, cut short: it may quote a long stretch of the line. */
function jsonProblem(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  return `invalid JSON: ${msg.length > 120 ? `${msg.slice(0, 117)}...` : msg}`;
}

/**
 * One JSON text, `text.slice(start, end)`, as a source row: its object, or why
 * it is not one (NDJSON lines, JSON array elements); with an envelope, the
 * record inside it, or undefined when the envelope passes it over.
 */
export function readRecord(
  envelope: Envelope | undefined,
  line: number,
  text: string,
  start: number,
  end: number,
): SourceRow | undefined {
  const row = parseRecord(line, text, start, end);
  return envelope === undefined || !('record' in row) ? row : envelope.open(line, row.record);
}

/**
 * One JSON text, `text.slice(start, end)`, as a source row: its object, or why
 * it is not one.
 */
export function parseRecord(line: number, text: string, start = 0, end = text.length): SourceRow {
  let value: unknown;
  try {
    value = parseJson(text, start, end);
  } catch (err) {
    return { line, problem: jsonProblem(err) };
  }
  const why = notARecord(value);
  return why === undefined
    ? { line, record: value as Record<string, unknown> }
    : { line, problem: why };
}

/** Whether `text.slice(start, end)` is more than `max` bytes of UTF-8 (a UTF-16 unit is at most 3). */
export function overBytes(text: string, start: number, end: number, max: number): boolean {
  return end - start > max / 3 && Buffer.byteLength(text.slice(start, end)) > max;
}

/**
 * A record begun in an earlier chunk, held until its end comes. Past `max`
 * UTF-16 units only the fact that it is too large is kept, so one huge
 * record never holds more than that in memory.
 */
export class HeldRecord {
  text = '';
  oversized = false;
  constructor(private readonly max: number) {}

  /** Whether anything of a record is held. */
  get held(): boolean {
    return this.text !== '' || this.oversized;
  }

  add(s: string): void {
    if (this.oversized) return;
    this.text += s;
    if (this.text.length > this.max) {
      this.oversized = true;
      this.text = '';
    }
  }

  reset(): void {
    this.text = '';
    this.oversized = false;
  }
}

export class NdjsonParser {
  /** Physical line of the scan position (1-based). */
  line = 1;
  private readonly partial: HeldRecord;
  private readonly notUtf8 = new NotUtf8Marks();
  private readonly opts: NdjsonOptions;

  constructor(opts: NdjsonOptions) {
    this.opts = opts;
    this.partial = new HeldRecord(opts.maxRecordBytes);
  }

  push(text: string, out: SourceRow[], notUtf8?: readonly NotUtf8[]): void {
    if (notUtf8) this.notUtf8.addLines(text, this.line, notUtf8);
    let i = 0;
    while (i < text.length) {
      const nl = text.indexOf('\n', i);
      if (nl < 0) {
        this.partial.add(text.slice(i));
        return;
      }
      // A line inside the chunk is parsed in place; one begun in an earlier chunk is joined first.
      if (!this.partial.held) this.emit(text, i, nl, out);
      else {
        const line = this.take(text.slice(i, nl));
        this.emit(line, 0, line.length, out);
      }
      i = nl + 1;
    }
  }

  end(out: SourceRow[]): void {
    if (this.partial.held) {
      const line = this.take('');
      this.emit(line, 0, line.length, out);
    }
  }

  private take(s: string): string {
    this.partial.add(s);
    const v = this.partial.text;
    this.partial.text = '';
    return v;
  }

  /** The line `text.slice(start, end)`. */
  private emit(text: string, start: number, end: number, out: SourceRow[]): void {
    const line = this.line++;
    const bad = this.notUtf8.next <= line ? this.notUtf8.take(line) : undefined;
    let warning: string | undefined;
    if (bad !== undefined) {
      if (!this.notUtf8.kept) {
        this.partial.oversized = false;
        out.push({ line, problem: notUtf8Problem(bad) });
        return;
      }
      // source.encoding auto: the line is read whole as Windows-1252.
      text = asWindows1252(text.slice(start, end));
      start = 0;
      end = text.length;
      warning = windows1252Warning(bad);
    }
    if (this.partial.oversized || overBytes(text, start, end, this.opts.maxRecordBytes)) {
      this.partial.oversized = false;
      out.push({
        line,
        problem: `line is larger than maxRecordBytes (${this.opts.maxRecordBytes} bytes)`,
      });
      return;
    }
    if (start === end || (text.charCodeAt(start) <= 32 && text.slice(start, end).trim() === '')) {
      return;
    }
    const row =
      this.opts.envelope === undefined
        ? parseRecord(line, text, start, end)
        : readRecord(this.opts.envelope, line, text, start, end);
    if (row !== undefined) out.push(withWarning(row, warning));
  }
}

/** `row`, with the reader's warning when it is a record and there is one. */
export function withWarning(row: SourceRow, warning: string | undefined): SourceRow {
  if (warning !== undefined && 'record' in row) row.warning = warning;
  return row;
}
