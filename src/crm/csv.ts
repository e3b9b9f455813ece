/**
 * A streaming RFC 4180 parser: quoted fields with delimiters, doubled quotes
 * and newlines; CRLF or LF line ends, mixed. Text is pushed in chunks of any
 * size and rows come out as `SourceRow`s carrying the physical line where they
 * start. It is a resumable state machine, so a field split across chunks is
 * never re-scanned and memory stays bounded: a cell over `maxFieldBytes` is
 * dropped as it streams and its row becomes a problem row.
 *
 * Lines without a quote take a fast path (one `split`); the rest go through
 * the state machine, which jumps between quotes, delimiters and newlines with
 * `indexOf`. Cells are kept as read (no trimming: the mapping trims). Blank
 * lines are skipped. A quote inside an unquoted cell is kept as a character,
 * as spreadsheets write it (`5" screen`). A row with bytes that were not
 * UTF-8 on any of its lines is a problem row (a bad byte in the header ends
 * the read: without names no row can be read); when the decoder kept those
 * bytes (`source.encoding: auto`), the row, or the header, is read whole as
 * Windows-1252 instead and the row carries a warning (windows-1252-rows.ts).
 */
import { detectDelimiter, otherDelimiterIn, type CsvDelimiter } from './csv-delimiter.js';
import type { SourceRow } from './row.js';
import { normaliseHeader, type HeaderColumn } from './headers.js';
import { SourceError } from './source-error.js';
import { NotUtf8Marks, notUtf8Problem, type NotUtf8 } from './utf8.js';
import { asWindows1252, windows1252Warning } from './windows-1252-rows.js';

export interface CsvOptions {
  /** Path or URL as shown in errors. */
  source: string;
  /** Forced delimiter; otherwise detected from the header line. */
  delimiter?: CsvDelimiter;
  /** Largest cell, in UTF-8 bytes; a larger one makes its row a problem row. */
  maxFieldBytes: number;
  /** Called once with the addressable header names and the header's line. */
  onHeader?: (names: string[], line: number) => void;
}

const FIELD_START = 0;
const UNQUOTED = 1;
const QUOTED = 2;
const QUOTE = 3; // a quote inside a quoted cell: closing, or the first of a pair
const CLOSED = 4; // after a closing quote
type State = 0 | 1 | 2 | 3 | 4;

const NL = 10;
const CR = 13;
const DQ = 34;

/** Detection waits for the header line; past this much text it decides anyway. */
const DETECT_LIMIT = 1024 * 1024;

export class CsvParser {
  /** Physical line of the scan position (1-based): where the next text starts. */
  line = 1;
  private readonly opts: CsvOptions;
  private delimiter: CsvDelimiter | undefined;
  private delimCode = 44;
  private pending = '';
  private pendingNotUtf8: NotUtf8[] = [];
  private readonly notUtf8 = new NotUtf8Marks();
  private started = false;
  private crOnly = false;
  private state: State = FIELD_START;
  private fields: string[] = [];
  private extraFields = 0;
  private partial = '';
  private oversized = false;
  private hadQuote = false;
  private quoteLine = 0;
  private recLine = 1;
  private problem: string | undefined;
  private header: HeaderColumn[] | undefined;
  private width = 0;
  private simpleHeader = true;
  private readonly maxChars: number;

  constructor(opts: CsvOptions) {
    this.opts = opts;
    this.delimiter = opts.delimiter;
    if (opts.delimiter) this.delimCode = opts.delimiter.charCodeAt(0);
    // Cells shorter than a third of the limit in UTF-16 units cannot exceed it in UTF-8 bytes.
    this.maxChars = Math.floor(opts.maxFieldBytes / 3);
  }

  push(text: string, out: SourceRow[], notUtf8?: readonly NotUtf8[]): void {
    if (!this.started) {
      if (notUtf8) {
        const at = this.pending.length;
        for (const m of notUtf8) this.pendingNotUtf8.push({ ...m, index: at + m.index });
      }
      this.pending += text;
      if (!this.start(false)) return;
      this.scanPending(out);
      return;
    }
    if (this.crOnly) text = text.replaceAll('\r', '\n');
    if (notUtf8) this.notUtf8.addLines(text, this.line, notUtf8);
    this.scan(text, out);
  }

  end(out: SourceRow[]): void {
    if (!this.started) {
      this.start(true);
      this.scanPending(out);
    }
    switch (this.state) {
      case QUOTED:
        throw new SourceError(
          'source.csv',
          'unterminated quoted field (the closing quote is missing)',
          {
            source: this.opts.source,
            line: this.quoteLine,
          },
        );
      case UNQUOTED:
      case QUOTE:
      case CLOSED:
        this.pushField(this.partial);
        this.endRecord(out);
        break;
      case FIELD_START:
        if (this.fields.length > 0) {
          this.pushField('');
          this.endRecord(out);
        }
        break;
    }
    if (this.header === undefined) {
      throw new SourceError('source.empty', 'empty export: no header line, only blank lines', {
        source: this.opts.source,
      });
    }
  }

  /**
   * Looks at the first line once it is complete: line ends (a bare CR, as
   * classic Mac Excel writes, is read as a line end) and the delimiter.
   */
  private start(final: boolean): boolean {
    let p = this.pending;
    const decide = final || p.length > DETECT_LIMIT;
    const nl = p.indexOf('\n');
    const cr = p.indexOf('\r');
    if (!decide && nl < 0 && (cr < 0 || cr === p.length - 1)) return false;
    this.crOnly =
      cr >= 0 && (nl < 0 || cr < nl) && p.charCodeAt(cr + 1) !== NL && cr < p.length - 1;
    if (this.crOnly) this.pending = p = p.replaceAll('\r', '\n');
    if (this.delimiter === undefined) {
      const d = detectDelimiter(p, decide);
      if (d === undefined) return false;
      this.setDelimiter(d);
    }
    this.started = true;
    return true;
  }

  /** The text held until the first line was complete (its bare CRs already read as line ends). */
  private scanPending(out: SourceRow[]): void {
    const text = this.pending;
    this.pending = '';
    if (this.pendingNotUtf8.length > 0) this.notUtf8.addLines(text, this.line, this.pendingNotUtf8);
    this.pendingNotUtf8 = [];
    this.scan(text, out);
  }

  private setDelimiter(d: CsvDelimiter): void {
    this.delimiter = d;
    this.delimCode = d.charCodeAt(0);
  }

  private scan(text: string, out: SourceRow[]): void {
    const n = text.length;
    const delim = this.delimiter as string;
    const dc = this.delimCode;
    let i = 0;
    let nextNl = -2; // -2: not looked up; -1: none in this text
    let nextQuote = -2;
    while (i < n) {
      if (nextNl !== -1 && nextNl < i) nextNl = text.indexOf('\n', i);
      const state = this.state;
      if (state === FIELD_START && this.fields.length === 0) {
        this.recLine = this.line;
        this.hadQuote = false;
        // Fast path: a whole line with no quote in it.
        if (nextNl >= 0) {
          if (nextQuote !== -1 && nextQuote < i) nextQuote = text.indexOf('"', i);
          if (nextQuote === -1 || nextQuote > nextNl) {
            let end = nextNl;
            if (end > i && text.charCodeAt(end - 1) === CR) end--;
            if (end > i) {
              const cells = text.slice(i, end).split(delim);
              if (end - i > this.maxChars) for (const c of cells) this.checkSize(c);
              this.fields = cells;
              this.endRecord(out);
            }
            this.line++;
            i = nextNl + 1;
            continue;
          }
        }
        if (text.charCodeAt(i) === DQ) {
          this.enterQuoted();
          i++;
        } else this.state = UNQUOTED;
        continue;
      }
      switch (state) {
        case FIELD_START:
          if (text.charCodeAt(i) === DQ) {
            this.enterQuoted();
            i++;
          } else this.state = UNQUOTED;
          break;
        case UNQUOTED: {
          const d = text.indexOf(delim, i);
          if (d >= 0 && (nextNl < 0 || d < nextNl)) {
            this.pushField(this.take(text, i, d));
            this.state = FIELD_START;
            i = d + 1;
          } else if (nextNl >= 0) {
            let v = this.take(text, i, nextNl);
            if (v.charCodeAt(v.length - 1) === CR) v = v.slice(0, -1);
            this.pushField(v);
            this.endRecord(out);
            this.line++;
            i = nextNl + 1;
          } else {
            this.append(text, i, n);
            i = n;
          }
          break;
        }
        case QUOTED: {
          const q = text.indexOf('"', i);
          const stop = q < 0 ? n : q;
          while (nextNl >= 0 && nextNl < stop) {
            this.line++;
            nextNl = text.indexOf('\n', nextNl + 1);
          }
          this.append(text, i, stop);
          if (q < 0) i = n;
          else {
            this.state = QUOTE;
            i = q + 1;
          }
          break;
        }
        case QUOTE:
          if (text.charCodeAt(i) === DQ) {
            this.append(text, i, i + 1);
            this.state = QUOTED;
            i++;
          } else this.state = CLOSED;
          break;
        case CLOSED: {
          const c = text.charCodeAt(i);
          if (c === dc) {
            this.pushField(this.partial);
            this.state = FIELD_START;
          } else if (c === NL) {
            this.pushField(this.partial);
            this.endRecord(out);
            this.line++;
          } else if (c !== CR) {
            this.problem ??= `unexpected text after the closing quote of field ${this.fields.length + 1}`;
            this.state = UNQUOTED;
            break;
          }
          i++;
          break;
        }
      }
    }
  }

  private enterQuoted(): void {
    this.state = QUOTED;
    this.hadQuote = true;
    this.quoteLine = this.line;
    this.partial = '';
    this.oversized = false;
  }

  /** The cell from the partial text carried over plus text[from, to). */
  private take(text: string, from: number, to: number): string {
    if (this.partial === '' && !this.oversized) return text.slice(from, to);
    this.append(text, from, to);
    return this.partial;
  }

  private append(text: string, from: number, to: number): void {
    if (this.oversized || from >= to) return;
    this.partial += text.slice(from, to);
    if (this.partial.length > this.opts.maxFieldBytes) {
      // Drop the cell as it streams: memory stays bounded whatever the file holds.
      this.oversized = true;
      this.partial = '';
    }
  }

  private checkSize(cell: string): boolean {
    if (cell.length > this.maxChars && Buffer.byteLength(cell) > this.opts.maxFieldBytes) {
      this.problem ??= `field ${this.fields.length + 1} is larger than maxFieldBytes (${this.opts.maxFieldBytes} bytes)`;
      return false;
    }
    return true;
  }

  private pushField(value: string): void {
    if (this.oversized) {
      this.problem ??= `field ${this.fields.length + 1} is larger than maxFieldBytes (${this.opts.maxFieldBytes} bytes)`;
      value = '';
    } else if (!this.checkSize(value)) value = '';
    this.partial = '';
    this.oversized = false;
    // A row of millions of cells (a binary file, a wrong delimiter) is counted, not kept.
    if (this.fields.length < (this.header ? this.width + 64 : 100_000)) this.fields.push(value);
    else this.extraFields++;
  }

  private endRecord(out: SourceRow[]): void {
    const fields = this.fields;
    const count = fields.length + this.extraFields;
    const line = this.recLine;
    // The record ends on this.line: a bad byte on any of its lines costs it, or
    // (its bytes kept: source.encoding auto) makes it read whole as Windows-1252.
    const bad = this.notUtf8.next <= this.line ? this.notUtf8.take(this.line) : undefined;
    let problem = this.problem;
    let warning: string | undefined;
    if (bad !== undefined) {
      if (this.notUtf8.kept) {
        for (let k = 0; k < fields.length; k++) fields[k] = asWindows1252(fields[k]!);
        warning = windows1252Warning(bad);
      } else problem = notUtf8Problem(bad);
    }
    this.fields = [];
    this.extraFields = 0;
    this.problem = undefined;
    this.state = FIELD_START;
    if (count === 1 && fields[0] === '' && !this.hadQuote) return; // a blank line
    if (this.header === undefined) {
      if (bad !== undefined && warning === undefined) {
        throw new SourceError('source.encoding', `header: ${problem}`, {
          source: this.opts.source,
          line,
        });
      }
      this.setHeader(fields, line, problem);
      return;
    }
    if (problem !== undefined) {
      out.push({ line, problem });
      return;
    }
    if (count !== this.width) {
      out.push({ line, problem: `row has ${count} fields, header has ${this.width}` });
      return;
    }
    const header = this.header;
    const record: Record<string, string> = {};
    if (this.simpleHeader) {
      for (let k = 0; k < header.length; k++)
        record[(header[k] as HeaderColumn).name] = fields[k] as string;
    } else {
      for (const col of header) {
        Object.defineProperty(record, col.name, {
          value: fields[col.index],
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
    }
    out.push(warning === undefined ? { line, record } : { line, record, warning });
  }

  private setHeader(fields: string[], line: number, problem: string | undefined): void {
    const source = this.opts.source;
    if (problem !== undefined)
      throw new SourceError('source.csv', `header: ${problem}`, { source, line });
    const columns = normaliseHeader(fields);
    if (columns.length === 0) {
      throw new SourceError('source.csv', 'the header line has no column names', { source, line });
    }
    const only = columns.length === 1 ? (columns[0] as HeaderColumn).name : undefined;
    const other = only === undefined ? undefined : otherDelimiterIn(only, this.delimiter);
    if (this.opts.delimiter !== undefined && other !== undefined) {
      throw new SourceError(
        'source.delimiter',
        `the header is one column with ${JSON.stringify(other)} in it: the delimiter is probably ${JSON.stringify(other)}, not ${JSON.stringify(this.opts.delimiter)}`,
        { source, line },
      );
    }
    this.header = columns;
    this.width = fields.length;
    // Cells are placed by index unless a column was dropped or a name would reach the prototype.
    this.simpleHeader =
      columns.length === fields.length && !columns.some((c) => c.name === '__proto__');
    this.opts.onHeader?.(
      columns.map((c) => c.name),
      line,
    );
  }
}
