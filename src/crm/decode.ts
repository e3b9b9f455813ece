/**
 * Bytes to text. The encoding is the byte-order mark's when there is one
 * (UTF-8, or UTF-16 LE or BE: Excel's "Unicode text"), else `source.encoding`:
 * `auto` (the default), `utf-8`, or any WHATWG label Node's TextDecoder
 * knows (windows-1252, shift_jis, …). Decoding streams, chunk by chunk.
 *
 * `auto` reads UTF-8 and keeps the bytes that are not UTF-8 in the text with
 * their place (utf8.ts, `keep`), so that the parsers read each row holding
 * them whole as Windows-1252, with a warning (windows-1252-rows.ts): a
 * Latin-1 export, a UTF-8 one and a UTF-8 one with a few Latin-1 rows are
 * all read whole, and a row that is UTF-8 is always read as UTF-8.
 *
 * `utf-8` (or a UTF-8 byte-order mark): bytes that do not decode cost their
 * row, not the file: they come out as U+FFFD with their place, and the
 * parsers make the row holding them a problem row. Any other encoding is
 * decoded strictly: bytes that do not decode end the read with an error
 * naming the line. A file with NUL bytes in its first KiB (in a single-byte
 * or UTF-8 text), or a zip archive, is not a text export.
 */
import { silentLogger, type Logger } from '../log.js';
import { closing } from './closing.js';
import { SourceError } from './source-error.js';
import { Utf8Decoder, type Decoded } from './utf8.js';

export type BomEncoding = 'utf-8' | 'utf-16le' | 'utf-16be';

const SNIFF_BYTES = 1024;

/** The encoding a byte-order mark announces, or undefined without one. */
export function bomEncoding(head: Uint8Array): BomEncoding | undefined {
  if (head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf) return 'utf-8';
  if (head[0] === 0xff && head[1] === 0xfe) return 'utf-16le';
  if (head[0] === 0xfe && head[1] === 0xff) return 'utf-16be';
  return undefined;
}

/** `source.encoding` that reads each row as UTF-8 when it is, as Windows-1252 when not. */
export const AUTO = 'auto';

/** The encoding of the rows that are not UTF-8 under `auto`. */
export const AUTO_FALLBACK = 'windows-1252';

/**
 * The encoding a label names: `auto`, or what a WHATWG label names (`latin1`
 * and `iso-8859-1` are `windows-1252`); undefined when this Node's
 * TextDecoder cannot decode it.
 */
export function encodingName(label: string): string | undefined {
  if (label.trim().toLowerCase() === AUTO) return AUTO;
  try {
    return new TextDecoder(label).encoding;
  } catch {
    return undefined;
  }
}

/** Why the head of a file is not text, or undefined if it may be (not for UTF-16 bytes). */
export function notTextReason(head: Uint8Array): string | undefined {
  const n = Math.min(head.length, SNIFF_BYTES);
  if (n >= 4 && head[0] === 0x50 && head[1] === 0x4b && head[2] === 0x03 && head[3] === 0x04) {
    return 'not a text export: a zip archive (an XLSX workbook or a zipped export); extract or save it as CSV first';
  }
  let nulEven = 0;
  let nulOdd = 0;
  for (let i = 0; i < n; i++) {
    if (head[i] === 0) {
      if (i % 2 === 0) nulEven++;
      else nulOdd++;
    }
  }
  if (nulEven + nulOdd === 0) return undefined;
  // ASCII text in UTF-16 has a NUL in every other byte, all on one side.
  const half = n / 2;
  if (nulOdd > half * 0.6 && nulEven === 0) {
    return 'looks like UTF-16 LE without a byte-order mark; set source.encoding to utf-16le, or export it as UTF-8';
  }
  if (nulEven > half * 0.6 && nulOdd === 0) {
    return 'looks like UTF-16 BE without a byte-order mark; set source.encoding to utf-16be, or export it as UTF-8';
  }
  return 'not a text export: binary data (NUL bytes) in the first KiB';
}

export interface DecodeOptions {
  /** Path or URL as shown in errors. */
  source: string;
  /** `source.encoding`: `auto` (the default) or a WHATWG label; a byte-order mark overrides it. */
  encoding?: string;
  /**
   * The line the consumer has reached (all text so far), so that a strict
   * decoding error can name the line.
   */
  currentLine: () => number;
  logger?: Logger;
  /** Filled with the encoding chosen, once the head of the file is read. */
  info?: DecodeInfo;
}

export interface DecodeInfo {
  /** The encoding of the rows (of every row but those read as `fallback`). */
  encoding?: string;
  /** `auto`: the encoding of the rows that are not UTF-8 (each carries a warning). */
  fallback?: string;
}

/** Decodes a byte stream to chunks of text (in UTF-8, with the bytes that did not decode). */
export function decodeText(
  bytes: AsyncIterable<Uint8Array>,
  opts: DecodeOptions,
): AsyncGenerator<Decoded> {
  return closing(bytes, (it) => decodeFrom(it, opts));
}

/** The encoding to decode with: the BOM's, else the label's, else `auto`. */
function chooseEncoding(head: Uint8Array, opts: DecodeOptions): string {
  const source = opts.source;
  const bom = bomEncoding(head);
  const label = opts.encoding;
  const named = label === undefined ? AUTO : encodingName(label);
  if (named === undefined) {
    throw new SourceError('source.config', `unknown encoding ${JSON.stringify(label)}`, {
      source,
    });
  }
  if (bom !== undefined && label !== undefined && named !== bom) {
    (opts.logger ?? silentLogger).debug(
      { source, encoding: label, bom },
      'the byte-order mark overrides source.encoding',
    );
  }
  return bom ?? named;
}

async function* decodeFrom(
  it: AsyncIterator<Uint8Array>,
  opts: DecodeOptions,
): AsyncGenerator<Decoded> {
  const source = opts.source;
  const headParts: Uint8Array[] = [];
  let headLen = 0;
  while (headLen < SNIFF_BYTES) {
    const next = await it.next();
    if (next.done) break;
    // Copied: the bytes underneath may reuse their buffer for the next chunk.
    headParts.push(Buffer.from(next.value));
    headLen += next.value.length;
  }
  if (headLen === 0) throw new SourceError('source.empty', 'empty export (0 bytes)', { source });
  const head = headParts.length === 1 ? (headParts[0] as Uint8Array) : Buffer.concat(headParts);
  const chosen = chooseEncoding(head, opts);
  const auto = chosen === AUTO;
  const encoding = auto ? 'utf-8' : chosen;
  if (opts.info) {
    opts.info.encoding = encoding;
    if (auto) opts.info.fallback = AUTO_FALLBACK;
  }
  const utf16 = encoding === 'utf-16le' || encoding === 'utf-16be';
  if (!utf16) {
    const reason = notTextReason(head);
    if (reason !== undefined) {
      const code = reason.startsWith('looks like UTF-16') ? 'source.encoding' : 'source.not-text';
      throw new SourceError(code, reason, { source });
    }
  }
  const decode =
    encoding === 'utf-8'
      ? utf8Decode(auto)
      : strictDecode(encoding, opts, bomEncoding(head) === undefined);

  let total = 0;
  let first = true;
  const emit = (d: Decoded): Decoded => {
    if (first && d.text.length > 0) {
      first = false;
      // Single-byte and UTF-8 heads were checked as bytes; UTF-16 text is checked here.
      if (utf16 && d.text.slice(0, SNIFF_BYTES / 2).includes('\0')) {
        throw new SourceError(
          'source.not-text',
          'not a text export: NUL characters in the first KiB',
          { source },
        );
      }
    }
    total += d.text.length;
    return d;
  };

  const head0 = emit(decode(head, false));
  if (head0.text.length > 0) yield head0;
  while (true) {
    const next = await it.next();
    if (next.done) break;
    const d = emit(decode(next.value, false));
    if (d.text.length > 0) yield d;
  }
  const tail = emit(decode(new Uint8Array(0), true));
  if (tail.text.length > 0) yield tail;
  if (total === 0) {
    throw new SourceError('source.empty', 'empty export (only a byte-order mark)', { source });
  }
}

type Decode = (chunk: Uint8Array, final: boolean) => Decoded;

/** `keep`: the bytes that are not UTF-8 stay in the text (`auto`); else each sequence is U+FFFD. */
function utf8Decode(keep: boolean): Decode {
  const decoder = new Utf8Decoder({ keep });
  return (chunk, final) => decoder.decode(chunk, final);
}

/**
 * Any encoding but UTF-8: bytes that do not decode end the read. The line is
 * found again with a lenient decoder (the first U+FFFD of the chunk).
 */
function strictDecode(encoding: string, opts: DecodeOptions, fromLabel: boolean): Decode {
  const decoder = new TextDecoder(encoding, { fatal: true });
  return (chunk, final) => {
    try {
      return { text: decoder.decode(chunk, { stream: !final }) };
    } catch (err) {
      const loose = new TextDecoder(encoding, { ignoreBOM: true }).decode(chunk);
      const at = loose.indexOf('\uFFFD');
      let line = opts.currentLine();
      for (let i = loose.indexOf('\n'); i >= 0 && i < at; i = loose.indexOf('\n', i + 1)) line++;
      const where = final ? ' at the end of the file' : '';
      const hint = fromLabel ? '; is source.encoding right?' : '';
      throw new SourceError(
        'source.encoding',
        `bytes that do not decode as ${encoding}${where}${hint}`,
        {
          source: opts.source,
          line,
          cause: err,
        },
      );
    }
  };
}
