/**
 * Bytes to text. The encoding comes from the byte-order mark: UTF-8 (with or
 * without BOM), UTF-16 LE or BE (Excel's "Unicode text"). Decoding streams
 * (`TextDecoder` with `stream: true`) and is strict (`fatal: true`): invalid
 * bytes are an error naming the line, never silently replaced. A file with
 * NUL bytes in its first KiB and no UTF-16 BOM is not a text export.
 */
import { SourceError } from './source-error.js';

export type TextEncoding = 'utf-8' | 'utf-16le' | 'utf-16be';

const SNIFF_BYTES = 1024;

/** The encoding a byte-order mark announces, else UTF-8. */
export function detectEncoding(head: Uint8Array): TextEncoding {
  if (head[0] === 0xff && head[1] === 0xfe) return 'utf-16le';
  if (head[0] === 0xfe && head[1] === 0xff) return 'utf-16be';
  return 'utf-8';
}

/** Why the head of a file without a UTF-16 BOM is not text, or undefined if it may be. */
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
    return 'looks like UTF-16 LE without a byte-order mark; export it as UTF-8 or as UTF-16 with a BOM';
  }
  if (nulEven > half * 0.6 && nulOdd === 0) {
    return 'looks like UTF-16 BE without a byte-order mark; export it as UTF-8 or as UTF-16 with a BOM';
  }
  return 'not a text export: binary data (NUL bytes) in the first KiB';
}

/**
 * Offset of the first byte that is not valid UTF-8, skipping up to three
 * leading continuation bytes (the tail of a character begun in the previous
 * chunk). Returns the length when all is valid.
 */
export function firstInvalidUtf8(b: Uint8Array): number {
  let i = 0;
  while (i < 3 && i < b.length && ((b[i] ?? 0) & 0xc0) === 0x80) i++;
  while (i < b.length) {
    const c = b[i] ?? 0;
    let need: number;
    if (c < 0x80) need = 0;
    else if (c >= 0xc2 && c <= 0xdf) need = 1;
    else if (c >= 0xe0 && c <= 0xef) need = 2;
    else if (c >= 0xf0 && c <= 0xf4) need = 3;
    else return i;
    const end = Math.min(i + need, b.length - 1);
    for (let k = i + 1; k <= end; k++) if (((b[k] ?? 0) & 0xc0) !== 0x80) return i;
    i += need + 1;
  }
  return b.length;
}

function countNewlines(b: Uint8Array, end: number): number {
  let n = 0;
  for (let i = 0; i < end; i++) if (b[i] === 0x0a) n++;
  return n;
}

export interface DecodeInfo {
  encoding?: TextEncoding;
}

/**
 * Decodes a byte stream to text chunks. `currentLine` tells the line the
 * consumer has reached (all text so far), so that an encoding error can name
 * the line of the bad byte.
 */
export async function* decodeText(
  bytes: AsyncIterable<Uint8Array>,
  name: string,
  currentLine: () => number,
  info: DecodeInfo = {},
): AsyncGenerator<string> {
  const it = bytes[Symbol.asyncIterator]();
  try {
    yield* decodeFrom(it, name, currentLine, info);
  } finally {
    // A consumer that stops early must close the file or the socket underneath.
    await it.return?.();
  }
}

async function* decodeFrom(
  it: AsyncIterator<Uint8Array>,
  name: string,
  currentLine: () => number,
  info: DecodeInfo,
): AsyncGenerator<string> {
  const headParts: Uint8Array[] = [];
  let headLen = 0;
  while (headLen < SNIFF_BYTES) {
    const next = await it.next();
    if (next.done) break;
    // Copied: the bytes underneath may reuse their buffer for the next chunk.
    headParts.push(Buffer.from(next.value));
    headLen += next.value.length;
  }
  if (headLen === 0)
    throw new SourceError('source.empty', 'empty export (0 bytes)', { source: name });
  const head = headParts.length === 1 ? (headParts[0] as Uint8Array) : Buffer.concat(headParts);
  const encoding = detectEncoding(head);
  info.encoding = encoding;
  if (encoding === 'utf-8') {
    const reason = notTextReason(head);
    if (reason !== undefined) {
      const code = reason.startsWith('looks like UTF-16') ? 'source.encoding' : 'source.not-text';
      throw new SourceError(code, reason, { source: name });
    }
  }

  const decoder = new TextDecoder(encoding, { fatal: true });
  let total = 0;
  let first = true;
  const decode = (chunk: Uint8Array, stream: boolean): string => {
    try {
      return decoder.decode(chunk, { stream });
    } catch (err) {
      const at = encoding === 'utf-8' ? firstInvalidUtf8(chunk) : chunk.length;
      const line = currentLine() + (encoding === 'utf-8' ? countNewlines(chunk, at) : 0);
      const detail =
        encoding === 'utf-8'
          ? stream || at < chunk.length
            ? 'invalid UTF-8 (is the export in another encoding, such as Windows-1252? re-export as UTF-8)'
            : 'invalid UTF-8: the file ends inside a multi-byte character'
          : `invalid ${encoding.toUpperCase()} (an unpaired surrogate)`;
      throw new SourceError('source.encoding', detail, { source: name, line, cause: err });
    }
  };
  const emit = (text: string): string => {
    if (first && text.length > 0) {
      first = false;
      if (encoding !== 'utf-8' && text.slice(0, SNIFF_BYTES / 2).includes('\0')) {
        throw new SourceError(
          'source.not-text',
          'not a text export: NUL characters in the first KiB',
          {
            source: name,
          },
        );
      }
    }
    total += text.length;
    return text;
  };

  const head0 = emit(decode(head, true));
  if (head0.length > 0) yield head0;
  while (true) {
    const next = await it.next();
    if (next.done) break;
    const text = emit(decode(next.value, true));
    if (text.length > 0) yield text;
  }
  const tail = emit(decode(new Uint8Array(0), false));
  if (tail.length > 0) yield tail;
  if (total === 0) {
    throw new SourceError('source.empty', 'empty export (only a byte-order mark)', {
      source: name,
    });
  }
}
