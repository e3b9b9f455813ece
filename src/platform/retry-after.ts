/**
 * A `Retry-After` header (RFC 9110 §10.2.3): delay-seconds or an HTTP-date,
 * as the wait in ms from `now`. One reading for every caller: the error
 * factory (platform answers), the rate learner (the pacer's holds) and the
 * CRM page reader.
 */

/**
 * The wait a `Retry-After` asks for, in ms from `now`; undefined when there is
 * none to honour: absent, empty, unreadable, negative, or a date already past.
 * Seconds may carry a fraction (`1.5`); of repeated headers the first counts.
 */
export function parseRetryAfter(
  value: string | readonly string[] | undefined,
  now: number,
): number | undefined {
  const raw = (typeof value === 'string' ? value : value?.[0])?.trim();
  if (!raw) return undefined;
  if (/^\d+(\.\d+)?$/.test(raw)) return Math.round(Number(raw) * 1_000);
  // An HTTP-date names its month and weekday; V8 would otherwise read "-3" as a year.
  const at = /[a-z]{3}/i.test(raw) ? Date.parse(raw) : NaN;
  if (Number.isNaN(at) || at < now) return undefined;
  return at - now;
}
