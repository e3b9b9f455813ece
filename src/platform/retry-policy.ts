/**
 * The one retry and outcome policy, modelled on stripe-node's `_shouldRetry`:
 * a pure function that, given what failed, where and how often, says what to
 * do. Every layer that meets a fault asks it (the in-process retry of a
 * request, a write, a listing, a CRM page, a run) and only carries the
 * decision out, so no two places can disagree on a rule or a cap.
 *
 * It lives beside the platform errors it mostly reads; a CRM page's fault is
 * given to it as a plain shape (`PageFault`), so it imports nothing but them.
 * The numbers come from `RetrySettings` (defaults and environment in
 * src/config.ts); jitter comes from the `random` draw the caller passes.
 */
import {
  AbortedError,
  BadRequestError,
  NotFoundError,
  PlatformError,
  RateLimitedError,
  ServerError,
  UnauthorizedError,
} from './errors.js';

/**
 * What is being tried. `create` is a POST (not idempotent); `update` a PUT,
 * `list` a GET of the platform (both idempotent); `read-page` a GET of a
 * CRM's list API; `run` a whole run, asked when a fault reaches it.
 */
export type Operation = 'create' | 'update' | 'list' | 'read-page' | 'run';

/** Whether sending the same request again can apply it twice. */
export const IDEMPOTENT: Readonly<Record<Operation, boolean>> = {
  create: false,
  update: true,
  list: true,
  'read-page': true,
  run: true,
};

/**
 * What to do about a fault:
 * - `retry-now`: try again in this process after `delayMs`.
 * - `retry-later`: hand it to the durable layer (a write: BullMQ's next
 *   attempt; a run: moved to the delayed set) to come back after `delayMs`.
 * - `pause-queue`: a 429: pause every worker of the write queue for `delayMs`
 *   (the server's Retry-After), then try again.
 * - `settle-unknown`: a create that may have applied: verify by listing,
 *   never send it again blindly.
 * - `reject`: final; the platform refused it, in its own words (`reason`,
 *   `field` for a 400 naming one).
 * - `give-up`: this operation stops trying: a write is recorded failed and
 *   its run goes on; a listing hands its error to its run, which asks again
 *   as `run`. `after` says which cap was reached.
 * - `fail-run`: the run cannot go on (a 401, a fault it cannot wait out, or
 *   its own retries spent); `reason` is the run's error.
 */
export type Decision =
  | { action: 'retry-now'; delayMs: number }
  | { action: 'retry-later'; delayMs: number }
  | { action: 'pause-queue'; delayMs: number }
  | { action: 'settle-unknown'; reason: string }
  | { action: 'reject'; reason: string; field?: string }
  | { action: 'give-up'; reason: string; after: 'attempts' | 'rate-limits' }
  | { action: 'fail-run'; reason: string };

export type Action = Decision['action'];

/** The numbers of the policy; defaults and environment variables in src/config.ts. */
export interface RetrySettings {
  /** In-process retries of a platform request after its first try (PLATFORM_RETRIES). */
  requestRetries: number;
  /** First in-process wait; doubled per retry, times a random factor in [1, 2) (PLATFORM_RETRY_MIN_MS). */
  requestMinDelayMs: number;
  /** Longest in-process wait, and longest wait for a 5xx's Retry-After (PLATFORM_RETRY_MAX_MS). */
  requestMaxDelayMs: number;
  /** BullMQ attempts of a write job (WRITE_ATTEMPTS). */
  writeAttempts: number;
  /** Wait before a write's second attempt; doubled per attempt, jitter 0.5 (WRITE_BACKOFF_MS). */
  writeBackoffMs: number;
  /** 429s in a row after which a write gives up, or a listing hands over to its run (RATE_LIMIT_MAX_RETRIES). */
  rateLimitMaxRetries: number;
  /** The pause of a 429 that gave no Retry-After. */
  rateLimitWaitMs: number;
  /** Times a run waits out a transient fault before it fails (RUN_RETRIES). */
  runRetries: number;
  /** A run's wait is this times 2^(its pauses so far, this one included) (RUN_BACKOFF_MS)… */
  runBackoffMs: number;
  /** …and never more than this (RUN_BACKOFF_MAX_MS). */
  runBackoffMaxMs: number;
  /** A CRM page's tries when its source gives no `retry:` (a job file setting, no variable). */
  page: PageRetry;
}

/** A CRM page's `retry:` (its attempts in all, the first included, and its waits). */
export interface PageRetry {
  attempts: number;
  minDelayMs: number;
  maxDelayMs: number;
}

/** A failed try of a CRM page, as the page reader describes it. */
export interface PageFault {
  readonly kind: 'page-fault';
  /** Can another try help (408, 429, 5xx, a dropped connection, a timeout, a body cut short)? */
  readonly retryable: boolean;
  readonly detail: string;
  /** The server's Retry-After, when it gave one. */
  readonly retryAfterMs?: number | null;
}

export interface Attempt {
  operation: Operation;
  /**
   * In-process tries of this request so far, the failed one included
   * (1-based). Left out once the in-process layer is done with the fault
   * (the write processor, a run): then no `retry-now`.
   */
  attempt?: number;
  /** Durable tries so far, this one included: a write job's attempt (1-based); a run's pauses. */
  durableAttempt?: number;
  /** A write job's own attempts (`job.opts.attempts`); default `writeAttempts`. */
  durableAttempts?: number;
  /** 429s met in a row before this one (a write: its rate-limited starts; a listing: of this page). */
  rateLimited?: number;
  /** `read-page`: the source's `retry:`; default `settings.page`. */
  page?: PageRetry;
  /** `update`: the platform id, named when the record is gone (404). */
  platformId?: number;
  /** A draw in [0, 1) for the jitter of a delay; default Math.random(). */
  random?: number;
}

export const UNAUTHORIZED_MESSAGE =
  'the platform refused the API key (401 Unauthorized): check PLATFORM_API_KEY; the run stopped without retrying';

/** What to do about `err`, met by `at.operation` (the whole table: docs/ARCHITECTURE.md, platform). */
export function decide(err: unknown, at: Attempt, settings: RetrySettings): Decision {
  const random = at.random ?? Math.random();
  switch (at.operation) {
    case 'read-page':
      return decidePage(err, at, at.page ?? settings.page, random);
    case 'run':
      return decideRun(err, at, settings);
    default:
      return decideRequest(err, at, settings, random);
  }
}

/** create, update, list: a request to the platform. */
function decideRequest(err: unknown, at: Attempt, s: RetrySettings, random: number): Decision {
  const op = at.operation;
  const write = op === 'create' || op === 'update';
  if (!(err instanceof PlatformError)) {
    // Not the platform's answer (Redis down, a bug). A write goes back to
    // BullMQ, whose attempts bound it (a job it gives up on is settled as
    // abandoned); a listing cannot go on.
    if (write) return { action: 'retry-later', delayMs: writeDelay(at, s, random) };
    return { action: 'fail-run', reason: messageOf(err) };
  }
  if (err instanceof RateLimitedError) return rateLimitDecision(err.retryAfterMs, at, s);
  if (err instanceof UnauthorizedError) return { action: 'fail-run', reason: UNAUTHORIZED_MESSAGE };

  const resendable = IDEMPOTENT[op] || !err.mayHaveApplied;
  if (err.retryable && resendable && at.attempt !== undefined && at.attempt <= s.requestRetries) {
    return { action: 'retry-now', delayMs: requestDelay(err, at.attempt, s, random) };
  }
  // A create that may have landed is verified by listing, whatever else is wrong.
  if (op === 'create' && err.mayHaveApplied) {
    return {
      action: 'settle-unknown',
      reason: 'create outcome unknown; it will be verified by listing',
    };
  }
  // The caller's signal (a shutdown's deadline): the write was not refused, it ends as a failed attempt.
  const transient = err.retryable || (write && err instanceof AbortedError);
  if (!transient) {
    if (!write) return { action: 'fail-run', reason: err.message };
    return rejection(err, at);
  }
  if (!write) {
    return { action: 'give-up', after: 'attempts', reason: err.message };
  }
  const attempts = at.durableAttempts ?? s.writeAttempts;
  if ((at.durableAttempt ?? 1) < attempts) {
    return { action: 'retry-later', delayMs: writeDelay(at, s, random) };
  }
  return {
    action: 'give-up',
    after: 'attempts',
    reason: `gave up after ${attempts} attempts: ${err.message}`,
  };
}

/**
 * A 429 of the platform (`decide`'s rule, also asked by the queue limiter,
 * which has only the Retry-After): every worker waits it out, up to the cap
 * of 429s in a row; past it, the operation gives up.
 */
export function rateLimitDecision(
  retryAfterMs: number | null,
  at: Pick<Attempt, 'operation' | 'rateLimited'>,
  s: Pick<RetrySettings, 'rateLimitMaxRetries' | 'rateLimitWaitMs'>,
): Decision & { action: 'pause-queue' | 'give-up' } {
  const wait = retryAfterMs ?? s.rateLimitWaitMs;
  const before = at.rateLimited ?? 0;
  if (before < s.rateLimitMaxRetries) return { action: 'pause-queue', delayMs: wait };
  const what = at.operation === 'list' ? 'while listing' : 'giving up on this write';
  return {
    action: 'give-up',
    after: 'rate-limits',
    reason: `rate limited by the platform ${before + 1} times in a row (last Retry-After ${wait} ms); ${what}`,
  };
}

/**
 * The reason of a final refusal: the platform's own words (its field
 * messages, or its detail) when it answered; the error's own message when
 * no answer came (a body refused before sending, a certificate refused),
 * since the platform then said nothing.
 */
function rejection(err: PlatformError, at: Attempt): Decision {
  const field = err instanceof BadRequestError ? Object.keys(err.fields)[0] : undefined;
  const parts =
    err instanceof BadRequestError
      ? Object.entries(err.fields).map(([f, msgs]) => `${f}: ${msgs.join(' ')}`)
      : [];
  let reason: string;
  if (err instanceof NotFoundError && at.operation === 'update') {
    reason = `platform record ${at.platformId ?? err.path} no longer exists (404)`;
  } else if (err.statusCode === undefined) {
    reason = err.message;
  } else {
    reason = `platform said ${err.statusCode}: ${parts.length > 0 ? parts.join('; ') : (err.detail ?? err.message)}`;
  }
  return { action: 'reject', reason, ...(field !== undefined && { field }) };
}

/** A CRM page: tried again in-process, Retry-After first; a read that cannot finish fails its run. */
function decidePage(err: unknown, at: Attempt, page: PageRetry, random: number): Decision {
  if (!isPageFault(err)) return { action: 'fail-run', reason: messageOf(err) };
  const attempt = at.attempt ?? page.attempts;
  if (err.retryable && attempt < page.attempts) {
    // The CRM's 429 is the CRM's: it pauses this read only, never the platform queue.
    const server = Math.min(err.retryAfterMs ?? 0, page.maxDelayMs);
    return {
      action: 'retry-now',
      delayMs: server + backoff(page.minDelayMs, page.maxDelayMs, attempt, random),
    };
  }
  return { action: 'fail-run', reason: err.detail };
}

/** A fault that reached a run: a platform outage is waited out from the checkpoint, up to the cap. */
function decideRun(err: unknown, at: Attempt, s: RetrySettings): Decision {
  if (err instanceof UnauthorizedError) return { action: 'fail-run', reason: UNAUTHORIZED_MESSAGE };
  const pauses = at.durableAttempt ?? 1;
  if (err instanceof PlatformError && err.retryable && pauses <= s.runRetries) {
    // 2^pauses, so the first pause is twice the base; the exponent is bounded to stay finite.
    const delayMs = Math.min(s.runBackoffMaxMs, s.runBackoffMs * 2 ** Math.min(pauses, 30));
    return { action: 'retry-later', delayMs };
  }
  return { action: 'fail-run', reason: messageOf(err) };
}

/** In-process wait: a 5xx's Retry-After (up to the cap), then the backoff. */
function requestDelay(err: PlatformError, attempt: number, s: RetrySettings, random: number) {
  const server =
    err instanceof ServerError && err.retryAfterMs
      ? Math.min(err.retryAfterMs, s.requestMaxDelayMs)
      : 0;
  return server + backoff(s.requestMinDelayMs, s.requestMaxDelayMs, attempt, random);
}

/** p-retry's formula, min × 2^(attempt − 1) × [1, 2), rounded down and capped. */
function backoff(minMs: number, maxMs: number, attempt: number, random: number): number {
  return Math.min(maxMs, Math.floor((1 + random) * minMs * 2 ** Math.min(attempt - 1, 30)));
}

/** The wait before a write's next attempt: `writeRetryDelay` of the attempt that failed. */
function writeDelay(at: Attempt, s: RetrySettings, random: number): number {
  return writeRetryDelay(at.durableAttempt ?? 1, s, random);
}

/**
 * BullMQ's exponential backoff with jitter 0.5, which the write queue's
 * `retry-policy` backoff strategy calls: base × 2^(attempt − 1), its upper
 * half at random. `attempt` is the one that failed (1-based).
 */
export function writeRetryDelay(attempt: number, s: RetrySettings, random: number): number {
  const full = Math.round(2 ** Math.min(attempt - 1, 30) * s.writeBackoffMs);
  return Math.floor(random * full * 0.5 + full * 0.5);
}

/**
 * A draw in [0, 1) fixed by `key` (FNV-1a): a write job's jitter comes from
 * its id and attempt, so the delay its processor decides and the one BullMQ's
 * backoff strategy applies are the same number, and jobs still spread apart.
 */
export function jitterOf(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h / 2 ** 32;
}

function isPageFault(err: unknown): err is PageFault {
  return (
    typeof err === 'object' && err !== null && (err as { kind?: unknown }).kind === 'page-fault'
  );
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
