/**
 * RFC 4180 CSV for every CSV crm-sync writes (`failures --csv` and the ops
 * API's failures as text/csv), with formula-safe cells: failure rows carry
 * CRM values verbatim, and a spreadsheet would run a cell such as
 * `=HYPERLINK(…)` as a formula (OWASP "CSV injection"). Such a cell is
 * prefixed with a single quote and quoted, as OWASP asks, so it is shown as
 * text.
 */

/** First characters a spreadsheet may read as the start of a formula. */
const FORMULA_START = /^[=+\-@\t\r]/;

/** One cell: formula-safe, and quoted when it is a formula or holds a comma, a quote or a line break. */
export function csvCell(value: unknown): string {
  let text: string;
  if (value === undefined || value === null) text = '';
  else if (typeof value === 'string') text = value;
  else if (typeof value === 'number' || typeof value === 'boolean') text = String(value);
  else text = JSON.stringify(value);
  const formula = FORMULA_START.test(text);
  if (formula) text = `'${text}`;
  return formula || /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** One record, ended by CRLF as RFC 4180 asks. */
export function csvRow(values: readonly unknown[]): string {
  return `${values.map(csvCell).join(',')}\r\n`;
}
