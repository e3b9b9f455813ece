/**
 * Bytes to text. The encoding is the byte-order mark's when there is one
 * (UTF-8, or UTF-16 LE or BE: Excel's "Unicode text"), else `source.encoding`
 * (any WHATWG label Node's TextDecoder knows: windows-1252, shift_jis, …),
 * else UTF-8. Decoding streams, chunk by chunk.
 *
 * UTF-8 bytes that do not decode cost their row, not the file: they come out
 * as U+FFFD with their place (utf8.ts), and the parsers make the row holding
 * them a problem row. Any other encoding is decoded strictly: bytes that do
 * not decode end the read with an error naming the line. A file with NUL
 * bytes in its first KiB (in a single-byte or UTF-8 text), or a zip archive,
 * is not a text export.
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

/**
 * The encoding a WHATWG label names (`latin1` and `iso-8859-1` are
 * `windows-1252`), or undefined when this Node's TextDecoder cannot decode it.
 */
export function encodingName(label: string): string | undefined {
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
  /** `source.encoding`: a WHATWG label; a byte-order mark overrides it. */
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
  encoding?: string;
}

/** Decodes a byte stream to chunks of text (in UTF-8, with the bytes that did not decode). */
export function decodeText(
  bytes: AsyncIterable<Uint8Array>,
  opts: DecodeOptions,
): AsyncGenerator<Decoded> {
  return closing(bytes, (it) => decodeFrom(it, opts));
}

/** The encoding to decode with: the BOM's, else the label's, else UTF-8. */
function chooseEncoding(head: Uint8Array, opts: DecodeOptions): string {
  const source = opts.source;
  const bom = bomEncoding(head);
  const label = opts.encoding;
  const named = label === undefined ? undefined : encodingName(label);
  if (label !== undefined && named === undefined) {
    throw new SourceError('source.config', `unknown encoding ${JSON.stringify(label)}`, {
      source,
    });
  }
  if (bom !== undefined && named !== undefined && named !== bom) {
    (opts.logger ?? silentLogger).debug(
      { source, encoding: label, bom },
      'the byte-order mark overrides source.encoding',
    );
  }
  return bom ?? named ?? 'utf-8';
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
  const encoding = chooseEncoding(head, opts);
  if (opts.info) opts.info.encoding = encoding;
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
      ? utf8Decode()
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

function utf8Decode(): Decode {
  const decoder = new Utf8Decoder();
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
