/**
 * `{{since}}` in a source URL: an incremental pull asks the CRM only for the
 * records changed since a start time (Salesforce `WHERE LastModifiedDate >
 * {{since}}`, Dataverse `$filter=modifiedon gt {{since}}`).
 *
 * The time is written in UTC to the second, `2024-05-01T10:00:00Z`, which
 * SOQL and OData both take as a date-time literal, and URL-encoded. A pull
 * with no start time (a job's first, or `--full`) gets 1970-01-01T00:00:00Z:
 * the filter stays in place and matches every record, so a filter that is
 * part of a larger query (a SOQL WHERE clause) stays valid.
 */

const PLACEHOLDER = /\{\{since\}\}|%7B%7Bsince%7D%7D/gi;

/** Whether the URL holds `{{since}}` (also percent-encoded, as a URL parser writes it in a path). */
export function hasSince(url: string): boolean {
  PLACEHOLDER.lastIndex = 0;
  return PLACEHOLDER.test(url);
}

/** The start time as the URL carries it: UTC, whole seconds (rounded down), `Z`. */
export function sinceText(since: Date | undefined): string {
  const seconds = Math.floor((since?.getTime() ?? 0) / 1000) * 1000;
  return new Date(seconds).toISOString().replace('.000Z', 'Z');
}

/** `url` with every `{{since}}` replaced by the URL-encoded start time (or 1970 when none). */
export function withSince(url: string, since: Date | undefined): string {
  const value = encodeURIComponent(sinceText(since));
  return url.replace(PLACEHOLDER, value);
}
