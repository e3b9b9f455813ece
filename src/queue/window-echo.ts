/**
 * How close to a platform's limit the pacer's turns may go, and what keeps
 * a late request from costing a 429 a window later (pure; the pacer,
 * src/queue/pacer.ts, carries it out for every replica).
 *
 * A platform counting a limit of C requests in a window of W (DRF's sliding
 * log, or a fixed window) refuses a request when the C before it arrived
 * within W of it. Turns spaced evenly at a share p of the limit put request
 * j + C a whole W/p after request j: the window is safe as long as request
 * j arrived no more than W/p − W ("the slack": 31 ms at 0.97) later than
 * request j + C will, counted from their turns. What makes a request late
 * is the worker's event loop (a turn's timer fires late, the request waits
 * to be written), the way to the platform and the platform's own queue
 * before it counts the request; a turn released early (turns due within
 * TOGETHER_MS go out together) takes from the slack too.
 *
 * The worker knows when each request was written out (its socket took the
 * last byte), and how long after that its answer began compared with the
 * usual (the shortest of the last seconds): an answer late by more than
 * the worker's own event loop was late then (its timers say how late)
 * tells that the request reached the platform, or was counted there, late
 * by as much. A request that went out or arrived later than the slack
 * covers, counted from its turn, makes the turns a window later wait until
 * the window is safe again. That is the request's echo, `[from, until)` in
 * turn times (Redis' clock): `from` is the turn of request j + C, `until` a
 * window after the request arrived, as late as it can have. The turn booked
 * inside an echo goes at its end, and the turns after it are spaced from
 * there: the schedule moves by what the slack did not cover, once, a
 * window after the late request, whichever replica books it. A group of
 * late requests (a stall) moves it once, by its first one's lateness; a
 * request late by what was moved already moves nothing. (Holding only the
 * turns inside the echo and keeping the schedule would bunch them at its
 * end, more than the callers can take at once: those taken late echo
 * again, longer, a window later.) A turn is echoed when its timer fires
 * late too, before it is written out, so that a slow answer still reaches
 * the turns a window later in time.
 *
 * What no echo sees is a platform that counts a request late and answers
 * it on time; the slack is all there is for that.
 */

/** The window a limit is taken to be counted in: a limit per second. */
export const WINDOW_MS = 1_000;
/**
 * A fixed PLATFORM_RATE_LIMIT is paced at this share of it. The slack it
 * leaves (W/p − W = 31 ms) holds the turns released early (TOGETHER_MS)
 * and the usual lateness of a request on a loaded worker; a request later
 * than that moves the turns a window after it (`echoOf`) by what the
 * slack did not cover, instead of meeting a 429. Paced at the limit
 * itself (no slack), every late request would move the schedule, for good;
 * with less slack, the ordinary lateness of a busy worker would (the
 * figures: docs/BENCHMARKS.md, rate).
 */
export const FIXED_MARGIN = 0.97;
/**
 * Turns due within this many milliseconds after the one a timer fires for
 * go out with it, up to that much early. At 1,000 requests a second a timer
 * per turn woke the worker for every request, and each answer came back on
 * its own; in groups it wakes once for several, and its claim and settle
 * batches grow (the CPU per write of each span: docs/BENCHMARKS.md,
 * sync-cost). Released early, a turn takes this much of the slack
 * (`echoOf` counts it).
 */
export const TOGETHER_MS = 10;
/** Milliseconds more an echo holds: the clocks' rounding (Redis' TIME and turns in whole ms). */
export const ECHO_GUARD_MS = 2;

/** The rate a fixed PLATFORM_RATE_LIMIT is paced at. */
export function fixedPace(limit: number): number {
  return limit * FIXED_MARGIN;
}

/** One request as the pacer saw it, in ms of Redis' clock. */
export interface Sent {
  /** The turn it was booked at. */
  turn: number;
  /** When its turn was released. */
  firedAt: number;
  /** When it was written out (its socket took the last byte); undefined: not known (yet). */
  sentAt?: number;
  /**
   * How much later than usual its answer began (ms), beyond what the
   * worker's own event loop was late: it reached the platform, or was
   * counted there, up to that much after it went out.
   */
  lateBy?: number;
}

/**
 * The echo of a request: a turn booked in `[from, until)` goes at `until`
 * (and the schedule after it), or undefined when the slack covers it.
 * `share` is the limit over the rate (1 / FIXED_MARGIN for a fixed limit):
 * request j + C is `W × share` after request j. While no limit is known
 * (a slow start, `share` Infinity) nothing is echoed: the slow start looks
 * for the limit, and a 429 says where it is.
 */
export function echoOf(r: Sent, share: number): { from: number; until: number } | undefined {
  if (!Number.isFinite(share)) return undefined;
  const from = r.turn + WINDOW_MS * Math.max(1, share);
  const arrived = Math.max(r.firedAt, r.sentAt ?? r.firedAt) + (r.lateBy ?? 0);
  const until = arrived + WINDOW_MS + TOGETHER_MS + ECHO_GUARD_MS;
  return until > from ? { from: Math.floor(from), until: Math.ceil(until) } : undefined;
}

/**
 * The times of `n` turns booked from `first` at `interval`, as the script
 * answers them: `moves` maps a turn's index to the end of the echo it fell
 * in, and the turns after it are spaced from there.
 */
export function turnsOf(
  first: number,
  interval: number,
  n: number,
  moves: ReadonlyMap<number, number>,
): number[] {
  const out: number[] = [];
  let at = first;
  for (let i = 0; i < n; i++) {
    at = moves.get(i) ?? (i === 0 ? first : at + interval);
    out.push(at);
  }
  return out;
}

/** Echoes as one list, sorted, those that meet merged (what is sent with the next booking). */
export function mergeEchoes(
  echoes: readonly { from: number; until: number }[],
): { from: number; until: number }[] {
  const out: { from: number; until: number }[] = [];
  for (const e of [...echoes].sort((a, b) => a.from - b.from)) {
    const last = out.at(-1);
    if (last && e.from <= last.until) last.until = Math.max(last.until, e.until);
    else out.push({ ...e });
  }
  return out;
}
