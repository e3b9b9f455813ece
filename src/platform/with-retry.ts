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
 * The first try goes straight; p-retry loops only once a try has failed and
 * the policy said to go again (no cap on the tries: the policy bounds them;
 * no wait of its own: the policy picks it). Setting p-retry up costs about
 * 10 µs, every platform write comes through here, and nearly all of them
 * succeed at the first try. The first try follows p-retry's rules too: a
 * thrown non-Error reaches the policy as a TypeError saying so.
 */
export async function retrying<T>(
  fn: (attempt: number) => Promise<T>,
  next: (err: unknown, attempt: number) => Decision,
  opts: RetryingOptions = {},
): Promise<T> {
  const { signal } = opts;
  signal?.throwIfAborted();
  // Whether a failed try goes again: the policy's decision, carried out (its wait included).
  const again = async (error: unknown, attempt: number): Promise<boolean> => {
    const d = next(error, attempt);
    if (d.action !== 'retry-now') return false;
    opts.onRetry?.(error, attempt, d);
    if (d.delayMs > 0) await sleep(d.delayMs, signal);
    return true;
  };
  try {
    const result = await fn(1);
    signal?.throwIfAborted();
    return result;
  } catch (err) {
    const error = err instanceof Error ? err : nonError(err);
    if (!(await again(error, 1))) throw error;
  }
  // p-retry counts its own tries from 1: ours go on from the second.
  return pRetry((n) => fn(n + 1), {
    retries: Number.POSITIVE_INFINITY,
    minTimeout: 0,
    ...(signal && { signal }),
    shouldRetry: ({ error, attemptNumber }) => again(error, attemptNumber + 1),
  });
}

/** p-retry's TypeError for a thrown value that is not an Error. */
function nonError(value: unknown): TypeError {
  return new TypeError(`Non-error was thrown: "${String(value)}". You should only throw errors.`);
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
