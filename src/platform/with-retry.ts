/**
 * The in-process retry layer (got's retry is off; BullMQ attempts and a run's
 * pauses are the durable layer: stacked layers would multiply the retries).
 * It decides nothing: the policy (retry-policy.ts) says whether a failed try
 * goes again now and after how long, and `retrying` carries that out.
 * Anything but `retry-now` ends it with the original error, for the
 * caller to ask the policy what comes next (a 429 pauses the write queue, a
 * create that may have applied is verified, …).
 */
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
 * The loop is p-retry's with our options (no cap on the tries: the policy
 * bounds them; no wait of its own: the policy picks it), written out: p-retry
 * sets itself up on every call (about 10 µs), and every platform write goes
 * through here. p-retry's one rule of its own, that a TypeError other than
 * a network error is never retried, is the policies' too: `decide` answers
 * "stop" to any error that is not a platform or page fault.
 */
export async function retrying<T>(
  fn: (attempt: number) => Promise<T>,
  next: (err: unknown, attempt: number) => Decision,
  opts: RetryingOptions = {},
): Promise<T> {
  const { signal } = opts;
  signal?.throwIfAborted();
  for (let attempt = 1; ; attempt++) {
    let error: unknown;
    try {
      const result = await fn(attempt);
      signal?.throwIfAborted();
      return result;
    } catch (err) {
      // As p-retry: a thrown non-Error becomes a TypeError saying so.
      error =
        err instanceof Error
          ? err
          : new TypeError(`Non-error was thrown: "${String(err)}". You should only throw errors.`);
    }
    const d = next(error, attempt);
    if (d.action !== 'retry-now') throw error;
    opts.onRetry?.(error, attempt, d);
    if (d.delayMs > 0) await sleep(d.delayMs, signal);
    signal?.throwIfAborted();
  }
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
