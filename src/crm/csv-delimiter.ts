/**
 * Which delimiter a CSV uses when the job does not say: the candidate seen
 * most often in the header line, and, when a forced one leaves the header a
 * single column, the candidate that column holds (the likely mistake).
 */

export type CsvDelimiter = ',' | ';' | '\t' | '|';
const CANDIDATES: readonly CsvDelimiter[] = [',', ';', '\t', '|'];

/**
 * The delimiter of a header line: the candidate seen most often outside
 * quotes in the first non-blank line (a comma on a tie or when none is seen).
 * Returns undefined when the line is not complete yet and more text may come.
 */
export function detectDelimiter(text: string, final: boolean): CsvDelimiter | undefined {
  const counts = [0, 0, 0, 0];
  let inQuote = false;
  let started = false;
  let complete = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (!started) {
      if (c === '\n' || c === '\r' || c === '\uFEFF') continue;
      started = true;
    }
    if (c === '"') inQuote = !inQuote;
    else if (!inQuote) {
      if (c === '\n') {
        complete = true;
        break;
      }
      const k = CANDIDATES.indexOf(c as CsvDelimiter);
      if (k >= 0) counts[k] = (counts[k] ?? 0) + 1;
    }
  }
  if (!complete && !final) return undefined;
  let best = 0;
  for (let k = 1; k < counts.length; k++) if ((counts[k] ?? 0) > (counts[best] ?? 0)) best = k;
  return CANDIDATES[best] ?? ',';
}

/** Another candidate delimiter in a lone header name, or undefined. */
export function otherDelimiterIn(
  name: string,
  delimiter: CsvDelimiter | undefined,
): CsvDelimiter | undefined {
  return CANDIDATES.find((c) => c !== delimiter && name.includes(c));
}
