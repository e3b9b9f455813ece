/**
 * A `Retry-After` header (RFC 9110 §10.2.3): delay-seconds or an HTTP-date,
 * as the wait in ms from `now`. One reading for every caller: the error
 * factory (platform answers), the rate learner (the pacer's holds) and the
 * CRM page reader.
 */

/**
 * The longest wait a platform's or CRM's header is taken at: an hour. A
 * longer one is read as this, so that a wrong header (a Unix time where
 * seconds to wait belong: 54 years) cannot stop every worker for good; a
 * platform still refusing after it says so again, and its 429s count
 * towards RATE_LIMIT_MAX_RETRIES as any other.
 */
export const MAX_WAIT_MS = 3_600_000;

/**
 * The wait a `Retry-After` asks for, in ms from `now`, at most MAX_WAIT_MS;
 * undefined when there is none to honour: absent, empty, unreadable,
 * negative, or a date already past. Seconds may carry a fraction (`1.5`);
 * of repeated headers the first counts.
 */
export function parseRetryAfter(
  value: string | readonly string[] | undefined,
  now: number,
): number | undefined {
  const raw = (typeof value === 'string' ? value : value?.[0])?.trim();
  const wait = raw ? waitOf(raw, now) : undefined;
  return wait === undefined ? undefined : Math.min(wait, MAX_WAIT_MS);
}

/** Seconds (a fraction allowed) or an HTTP-date not yet past, as ms from `now`. */
function waitOf(raw: string, now: number): number | undefined {
  if (/^\d+(\.\d+)?$/.test(raw)) return Math.round(Number(raw) * 1_000);
  // An HTTP-date names its month and weekday; V8 would otherwise read "-3" as a year.
  const at = /[a-z]{3}/i.test(raw) ? Date.parse(raw) : NaN;
  return Number.isNaN(at) || at < now ? undefined : at - now;
}
