/**
 * `source.encoding: auto`: a row that is UTF-8 is read as UTF-8, a row that
 * is not is read whole as Windows-1252 (what Salesforce Data Export, Data
 * Loader and Excel on Windows write) and carries a warning.
 *
 * The decoder reads the export as UTF-8 and keeps each byte that is not
 * UTF-8 in the text as itself (utf8.ts, `keep`: U+DC80-U+DCFF, lone low
 * surrogates that decoded text never holds). The parser knows which rows
 * hold one (their marks) and hands their text, or each of their cells, to
 * `asWindows1252`, which gives exactly what decoding the row's bytes as
 * Windows-1252 gives: every character of the row's other bytes was decoded
 * from UTF-8 and is encoded back. The delimiters, quotes and line ends
 * that split a row are ASCII, the same bytes in both encodings, so a cell
 * read this way is the cell of the row decoded as Windows-1252. Rows that are
 * UTF-8 never come here.
 */
import { KEPT_BYTE_BASE } from './utf8.js';

/**
 * The character of each byte in Windows-1252 (WHATWG: 0x81, 0x8D, 0x8F, 0x90,
 * 0x9D stand for themselves). Decoded with `stream`: Node 20's TextDecoder
 * reads windows-1252 as ISO-8859-1 (0x80 as U+0080, not €) in a single call
 * without it.
 */
const CHARS: readonly string[] = Array.from(
  new TextDecoder('windows-1252').decode(
    Uint8Array.from({ length: 256 }, (_, i) => i),
    {
      stream: true,
    },
  ),
);

/** The text of a row (or cell) that held bytes that are not UTF-8, read as Windows-1252. */
export function asWindows1252(text: string): string {
  const n = text.length;
  let out = '';
  // Runs of ASCII are copied whole: they read the same in both encodings.
  let from = 0;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) continue;
    if (i > from) out += text.slice(from, i);
    if (c >= KEPT_BYTE_BASE + 0x80 && c <= KEPT_BYTE_BASE + 0xff) out += CHARS[c & 0xff];
    else if (c < 0x800) out += CHARS[0xc0 | (c >> 6)]! + CHARS[0x80 | (c & 0x3f)]!;
    else if (c >= 0xd800 && c <= 0xdbff) {
      // A character above U+FFFF (decoded from four bytes): a surrogate pair.
      const cp = text.codePointAt(i)!;
      out +=
        CHARS[0xf0 | (cp >> 18)]! +
        CHARS[0x80 | ((cp >> 12) & 0x3f)]! +
        CHARS[0x80 | ((cp >> 6) & 0x3f)]! +
        CHARS[0x80 | (cp & 0x3f)]!;
      i++;
    } else {
      out +=
        CHARS[0xe0 | (c >> 12)]! + CHARS[0x80 | ((c >> 6) & 0x3f)]! + CHARS[0x80 | (c & 0x3f)]!;
    }
    from = i + 1;
  }
  return from === 0 ? text : out + text.slice(from);
}

const WARNING = 'decoded as windows-1252: ';

/** The warning a row read as Windows-1252 carries: where its first byte that is not UTF-8 is. */
export function windows1252Warning(offset: number): string {
  return `${WARNING}not UTF-8 at byte ${offset} of the export`;
}

/** Whether a row's warning is that it was read as Windows-1252. */
export function isWindows1252Warning(warning: string): boolean {
  return warning.startsWith(WARNING);
}
