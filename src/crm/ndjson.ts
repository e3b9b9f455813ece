/**
 * Newline-delimited JSON: one value per line. A line that is not valid JSON,
 * or not an object, is a problem row with its line number and the file goes
 * on. Blank lines are skipped. A line longer than `maxRecordBytes` is dropped
 * as it streams (memory stays bounded) and reported as a problem row.
 *
 * Memory: nothing is kept, but JSON.parse internalizes string values of up
 * to 10 characters (V8), so an export with a unique short value per row (a
 * 10-digit HubSpot id) leaves one old-space string per row until V8's next
 * mark-compact: peak RSS grows to a plateau of a few tens of MiB set by V8's
 * heap sizing, not by the file (docs/BENCHMARKS.md, rss).
 */
import type { SourceRow } from './row.js';

export interface NdjsonOptions {
  maxRecordBytes: number;
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

/** One JSON text as a source row: its object, or why it is not one (NDJSON lines, JSON array elements). */
export function parseRecord(line: number, text: string): SourceRow {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { line, problem: jsonProblem(err) };
  }
  const why = notARecord(value);
  return why === undefined
    ? { line, record: value as Record<string, unknown> }
    : { line, problem: why };
}

export class NdjsonParser {
  /** Physical line of the scan position (1-based). */
  line = 1;
  private partial = '';
  private oversized = false;
  private readonly opts: NdjsonOptions;

  constructor(opts: NdjsonOptions) {
    this.opts = opts;
  }

  push(text: string, out: SourceRow[]): void {
    let i = 0;
    while (i < text.length) {
      const nl = text.indexOf('\n', i);
      if (nl < 0) {
        this.append(text.slice(i));
        return;
      }
      const line =
        this.partial === '' && !this.oversized ? text.slice(i, nl) : this.take(text.slice(i, nl));
      this.emit(line, out);
      i = nl + 1;
    }
  }

  end(out: SourceRow[]): void {
    if (this.partial !== '' || this.oversized) this.emit(this.take(''), out);
  }

  private append(s: string): void {
    if (this.oversized) return;
    this.partial += s;
    if (this.partial.length > this.opts.maxRecordBytes) {
      this.oversized = true;
      this.partial = '';
    }
  }

  private take(s: string): string {
    this.append(s);
    const v = this.partial;
    this.partial = '';
    return v;
  }

  private emit(text: string, out: SourceRow[]): void {
    const line = this.line++;
    if (this.oversized) {
      this.oversized = false;
      out.push({
        line,
        problem: `line is larger than maxRecordBytes (${this.opts.maxRecordBytes} bytes)`,
      });
      return;
    }
    if (
      text.length > this.opts.maxRecordBytes / 3 &&
      Buffer.byteLength(text) > this.opts.maxRecordBytes
    ) {
      out.push({
        line,
        problem: `line is larger than maxRecordBytes (${this.opts.maxRecordBytes} bytes)`,
      });
      return;
    }
    if (text.length === 0 || (text.charCodeAt(0) <= 32 && text.trim() === '')) return;
    out.push(parseRecord(line, text));
  }
}
