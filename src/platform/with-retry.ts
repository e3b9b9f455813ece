/**
 * The in-process retry layer (got's retry is off; BullMQ attempts and a run's
 * pauses are the durable layer: stacked layers would multiply the retries).
 * It decides nothing: the policy (retry-policy.ts) says whether a failed try
 * goes again now and after how long, and `retrying` carries that out on
 * p-retry. Anything but `retry-now` ends it with the original error, for the
 * caller to ask the policy what comes next (a 429 pauses the write queue, a
 * create that may have applied is verified, …).
 */
import pRetry from 'p-retry';
import { RETRY_DEFAULTS } from '../config.js';
import { sleep } from '../sleep.js';
import { decide, type Decision, type RetrySettings } from './retry-policy.js';

export interface RetryingOptions {
  signal?: AbortSignal;
  /** Called before each retry with the error, the try that failed (1-based) and the decision. */
  onRetry?: (err: unknown, attempt: number, decision: Decision & { action: 'retry-now' }) => void;
}

/**
 * Runs `fn` until it succeeds or `next(err, attempt)` answers anything but
 * `retry-now`; waits the decided delay between tries (an abort ends the wait).
 * The final failure is the original error, never a wrapper. An abort after a
 * try ends the loop with the signal's reason.
 *
 * The first try goes straight; p-retry takes over only once it has failed
 * (no cap on the tries: the policy bounds them; no wait of its own: the
 * policy picks it). Setting p-retry up costs about 10 µs, every platform
 * write comes through here, and nearly all of them succeed at the first
 * try. The failed first try is handed to p-retry as its own first try, so
 * p-retry's rules apply to it as to every later one: a thrown non-Error
 * becomes a TypeError, and a TypeError that is not a network error ends the
 * loop without asking the policy.
 */
export async function retrying<T>(
  fn: (attempt: number) => Promise<T>,
  next: (err: unknown, attempt: number) => Decision,
  opts: RetryingOptions = {},
): Promise<T> {
  const { signal } = opts;
  // Each try as p-retry makes it with the signal: not begun once aborted, failed by an abort during it.
  const attempt = async (n: number): Promise<T> => {
    signal?.throwIfAborted();
    const result = await fn(n);
    signal?.throwIfAborted();
    return result;
  };
  let failed: unknown;
  try {
    return await attempt(1);
  } catch (err) {
    failed = err;
  }
  // The signal is the tries' and the waits' (above, and `sleep`): given to p-retry too, it
  // would end the loop at once when an abort failed the first try, before the policy is asked.
  return pRetry((n) => (n === 1 ? Promise.reject(failed) : attempt(n)), {
    retries: Number.POSITIVE_INFINITY,
    minTimeout: 0,
    shouldRetry: async ({ error, attemptNumber }) => {
      const d = next(error, attemptNumber);
      if (d.action !== 'retry-now') return false;
      opts.onRetry?.(error, attemptNumber, d);
      if (d.delayMs > 0) await sleep(d.delayMs, signal);
      // As p-retry's own wait with the signal: an abort ends the loop with its reason.
      signal?.throwIfAborted();
      return true;
    },
  });
}

export interface RetryOptions extends RetryingOptions {
  /** What the request is: the policy's rules differ for a create (not idempotent). */
  operation: 'create' | 'update' | 'list';
  /** Default RETRY_DEFAULTS (src/config.ts). */
  settings?: RetrySettings;
}

/** A platform request under the policy's in-process retries. */
export function withRetry<T>(fn: (attempt: number) => Promise<T>, opts: RetryOptions): Promise<T> {
  const settings = opts.settings ?? RETRY_DEFAULTS;
  return retrying(
    fn,
    (err, attempt) => decide(err, { operation: opts.operation, attempt }, settings),
    opts,
  );
}
