/**
 * The one error a CRM source throws when the export as a whole cannot be read
 * (missing file, unreachable URL, truncated gzip, binary garbage, broken JSON
 * structure). A single bad row is not an error: it becomes a `{ line, problem }`
 * row and the file goes on. Messages name the source (a path, or a URL with
 * credentials and query removed) and, where it applies, the line.
 */
export type SourceErrorCode =
  | 'source.config'
  | 'source.not-found'
  | 'source.unreadable'
  | 'source.unreachable'
  | 'source.timeout'
  | 'source.http-status'
  | 'source.credentials-in-url'
  | 'source.empty'
  | 'source.not-text'
  | 'source.encoding'
  | 'source.gzip'
  | 'source.csv'
  | 'source.delimiter'
  | 'source.json'
  | 'source.pagination'
  | 'source.too-large-field';

/** Codes where trying again later can help (network faults, server errors). */
const RETRYABLE = new Set<SourceErrorCode>(['source.unreachable', 'source.timeout']);

export interface SourceErrorOptions {
  /** Path or display URL (never with credentials). */
  source: string;
  line?: number;
  cause?: unknown;
  /** Overrides the default for the code (e.g. an HTTP 503 is retryable, a 404 is not). */
  retryable?: boolean;
  /** HTTP status, for `source.http-status`. */
  statusCode?: number;
}

export class SourceError extends Error {
  readonly code: SourceErrorCode;
  readonly source: string;
  readonly line: number | undefined;
  readonly retryable: boolean;
  readonly statusCode: number | undefined;
  /** The message without the "source line N:" prefix. */
  readonly detail: string;

  constructor(code: SourceErrorCode, detail: string, opts: SourceErrorOptions) {
    const where = opts.line === undefined ? opts.source : `${opts.source} line ${opts.line}`;
    super(`${where}: ${detail}`, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'SourceError';
    this.code = code;
    this.source = opts.source;
    this.line = opts.line;
    this.detail = detail;
    this.statusCode = opts.statusCode;
    this.retryable = opts.retryable ?? RETRYABLE.has(code);
  }
}
