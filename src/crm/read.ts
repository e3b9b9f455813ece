/**
 * The entry point of the CRM layer: `readRows(spec)` streams an export, a
 * local file or an http(s) URL, as batches of `SourceRow`s, whatever its
 * format (CSV, NDJSON, JSON), compression (gzip) or encoding (by default
 * each row as UTF-8 when it is, else as Windows-1252 with a warning; UTF-16
 * with BOM; or `spec.encoding`). Memory stays bounded by the batch size and
 * the largest record, not by the file. With `encoding: utf-8`, a row holding
 * bytes that are not UTF-8 is a problem row (decode.ts, utf8.ts); the other
 * rows are read.
 *
 * The format is `spec.format`, else the file extension (`.csv`, `.tsv`,
 * `.txt`; `.ndjson`, `.jsonl`; `.json`; a `.gz` suffix is looked through),
 * else sniffed from the first non-blank character: `[` is JSON; `{` is NDJSON
 * when the first line is a complete object (unless that object is itself the
 * holder of the records array), JSON otherwise; anything else is CSV.
 *
 * `recordPath` and `stream` take each record out of its envelope
 * (envelope.ts); `recordsPath` on NDJSON, or either of those on CSV, is a
 * `source.config` error rather than ignored.
 *
 * A 0-byte export is an error (`source.empty`: a failed download often looks
 * like this); a CSV with a header and no rows, or `[]`, is zero rows.
 */
import { silentLogger, type Logger } from '../log.js';
import { CsvParser } from './csv.js';
import { decodeText, type DecodeInfo } from './decode.js';
import { Envelope, type EnvelopeTally } from './envelope.js';
import { DEFAULT_RECORD_KEYS, JsonArrayParser } from './json.js';
import { NdjsonParser } from './ndjson.js';
import { readPages } from './page-reader.js';
import type { SourceRow } from './row.js';
import { SourceError } from './source-error.js';
import type { Decoded, NotUtf8 } from './utf8.js';
import { formatFromName, openBytes, type SourceEnv } from './source.js';
import { sourceName } from './source-spec.js';
import {
  RECORDS_PATH_NDJSON,
  SourceSpecSchema,
  type SourceFormat,
  type SourceSpec,
} from './source-spec.js';

export interface ReadOptions {
  signal?: AbortSignal;
  /** Rows per yielded batch (the last may be shorter). Default 500. */
  batchSize?: number;
  logger?: Logger;
  /** Largest CSV cell, in UTF-8 bytes; a larger one makes its row a problem row. Default 1 MiB. */
  maxFieldBytes?: number;
  /** Largest NDJSON line or JSON array element, in UTF-8 bytes. Default 16 MiB. */
  maxRecordBytes?: number;
  /** CSV only: called once with the addressable header names, before any row. */
  onHeader?: (names: string[], line: number) => void;
  /** Filled with the encoding the export is read in, once its head is read (decode.ts). */
  decoding?: DecodeInfo;
  /**
   * Where CRM_SOURCE_AUTHORIZATION and `${VAR}` references of a URL source are
   * read (config's `sourceEnv`); none when not given: a local file needs none.
   */
  env?: SourceEnv;
  /** Filled in as the rows are read when the source has `stream` or `recordPath` (envelope.ts). */
  tally?: EnvelopeTally;
}

export const DEFAULT_BATCH_SIZE = 500;
export const DEFAULT_MAX_FIELD_BYTES = 1024 * 1024;
export const DEFAULT_MAX_RECORD_BYTES = 16 * 1024 * 1024;

interface Parser {
  readonly line: number;
  /** `notUtf8`: the bad UTF-8 sequences in `text`: their rows become problem rows, or are read as Windows-1252. */
  push(text: string, out: SourceRow[], notUtf8?: readonly NotUtf8[]): void;
  end(out: SourceRow[]): void;
}

/**
 * The format the first text of an export shows, or undefined when more text
 * is needed to tell (the first line is not complete yet and `final` is false).
 */
export function sniffFormat(
  text: string,
  final: boolean,
  recordsPath?: string,
  maxLine = DEFAULT_MAX_RECORD_BYTES,
): SourceFormat | undefined {
  const start = text.search(/[^\s\uFEFF]/);
  if (start < 0) return final ? 'csv' : undefined;
  const c = text[start];
  if (c === '[') return 'json';
  if (c !== '{') return 'csv';
  const nl = text.indexOf('\n', start);
  if (nl < 0 && !final && text.length - start <= maxLine) return undefined;
  let first: unknown;
  try {
    first = JSON.parse(nl < 0 ? text.slice(start) : text.slice(start, nl));
  } catch {
    return 'json';
  }
  if (first === null || typeof first !== 'object' || Array.isArray(first)) return 'json';
  // A one-line API answer ({"results": [...]}) is the holder of the records, not a record.
  let holder: unknown = first;
  for (const key of recordsPath?.split('.') ?? []) {
    holder =
      holder !== null && typeof holder === 'object'
        ? (holder as Record<string, unknown>)[key]
        : undefined;
  }
  if (recordsPath !== undefined) return Array.isArray(holder) ? 'json' : 'ndjson';
  const obj = first as Record<string, unknown>;
  return DEFAULT_RECORD_KEYS.some((k) => Array.isArray(obj[k])) ? 'json' : 'ndjson';
}

function specError(
  input: unknown,
  issues: { path: PropertyKey[]; message: string }[],
): SourceError {
  const name =
    input !== null && typeof input === 'object' ? sourceName(input as SourceSpec) : '(source)';
  const list = issues.map((i) => `${i.path.length ? i.path.join('.') : '(spec)'}: ${i.message}`);
  return new SourceError('source.config', `invalid source: ${list.join('; ')}`, { source: name });
}

function countNewlines(parts: Decoded[]): number {
  let n = 0;
  for (const { text } of parts)
    for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

function joined(parts: Decoded[]): string {
  return parts.map((p) => p.text).join('');
}

/** Streams an export as batches of rows. Faults of the whole source throw `SourceError`. */
export async function* readRows(
  input: SourceSpec,
  opts: ReadOptions = {},
): AsyncGenerator<SourceRow[], void, undefined> {
  const checked = SourceSpecSchema.safeParse(input);
  if (!checked.success) throw specError(input, checked.error.issues);
  const spec = checked.data;
  const name = sourceName(spec);
  const logger = opts.logger ?? silentLogger;
  const batchSize = Math.max(1, opts.batchSize ?? DEFAULT_BATCH_SIZE);
  const maxFieldBytes = opts.maxFieldBytes ?? DEFAULT_MAX_FIELD_BYTES;
  const maxRecordBytes = opts.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES;
  const signal = opts.signal;
  signal?.throwIfAborted();
  const envelope = Envelope.wanted(spec) ? new Envelope(spec, opts.tally) : undefined;
  // A CRM list API: JSON pages, each fetched whole (pages.ts).
  if (spec.paginate !== undefined) {
    yield* readPages(spec, { signal, env: opts.env, logger, batchSize, envelope });
    return;
  }

  let format: SourceFormat | undefined = spec.format ?? formatFromName(spec);
  let parser: Parser | undefined;
  const sniffed: Decoded[] = [];
  const info: DecodeInfo = opts.decoding ?? {};
  const text = decodeText(openBytes(spec, { signal, env: opts.env }), {
    source: name,
    encoding: spec.encoding,
    currentLine: () => parser?.line ?? 1 + countNewlines(sniffed),
    logger,
    info,
  });

  const create = (f: SourceFormat): Parser => {
    logger.debug({ source: name, format: f, encoding: info.encoding }, 'reading export');
    const unusable =
      f === 'ndjson' && spec.recordsPath !== undefined
        ? RECORDS_PATH_NDJSON
        : f === 'csv' && envelope !== undefined
          ? 'recordPath and stream read JSON records, and this export is CSV'
          : undefined;
    if (unusable !== undefined) {
      throw new SourceError('source.config', `invalid source: ${unusable}`, { source: name });
    }
    if (f === 'csv') {
      return new CsvParser({
        source: name,
        delimiter: spec.delimiter,
        maxFieldBytes,
        onHeader: opts.onHeader,
      });
    }
    if (f === 'ndjson') return new NdjsonParser({ maxRecordBytes, envelope });
    return new JsonArrayParser({
      source: name,
      recordsPath: spec.recordsPath,
      maxRecordBytes,
      envelope,
    });
  };

  let out: SourceRow[] = [];
  let rows = 0;
  for await (const chunk of text) {
    signal?.throwIfAborted();
    if (parser === undefined) {
      sniffed.push(chunk);
      format ??= sniffFormat(joined(sniffed), false, spec.recordsPath, maxRecordBytes);
      if (format === undefined) continue;
      parser = create(format);
      for (const s of sniffed.splice(0)) parser.push(s.text, out, s.notUtf8);
    } else parser.push(chunk.text, out, chunk.notUtf8);
    while (out.length >= batchSize) {
      let batch: SourceRow[];
      if (out.length === batchSize) {
        batch = out;
        out = [];
      } else {
        batch = out.slice(0, batchSize);
        out = out.slice(batchSize);
      }
      rows += batch.length;
      yield batch;
      signal?.throwIfAborted();
    }
  }
  if (parser === undefined) {
    parser = create(format ?? sniffFormat(joined(sniffed), true, spec.recordsPath) ?? 'csv');
    for (const s of sniffed.splice(0)) parser.push(s.text, out, s.notUtf8);
  }
  parser.end(out);
  for (let k = 0; k < out.length; k += batchSize) {
    const batch = out.slice(k, k + batchSize);
    rows += batch.length;
    yield batch;
  }
  logger.debug({ source: name, rows, lines: parser.line }, 'export read');
  if (envelope !== undefined) logEnvelope(envelope, spec, name, logger);
}

/** A stream with no record in the whole export is said (a misspelt name reads nothing). */
function logEnvelope(envelope: Envelope, spec: SourceSpec, name: string, logger: Logger): void {
  const { streams, values, problems } = envelope.tally;
  const found = spec.stream === undefined ? undefined : (streams.get(spec.stream) ?? 0);
  const fields = { source: name, values, problems, streams: Object.fromEntries(streams) };
  if (found === 0) {
    logger.warn(
      fields,
      `no RECORD of stream ${JSON.stringify(spec.stream)}: ${streamsSeen(streams)}`,
    );
  } else logger.debug(fields, 'envelopes opened');
}

/** The streams of the RECORD messages read, for a message. */
export function streamsSeen(streams: ReadonlyMap<string, number>): string {
  if (streams.size === 0) return 'the export has no RECORD message';
  const list = [...streams].map(([s, n]) => `${s} (${n.toLocaleString('en-US')})`);
  return `its streams are ${list.join(', ')}`;
}
