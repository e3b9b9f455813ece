/**
 * The one in-process retry layer (got's retry is off, BullMQ attempts are the
 * durable outer layer: stacked layers would multiply the retries).
 * `shouldRetry` is the whole policy; `withRetry` runs it on p-retry with
 * jittered exponential backoff.
 *
 * A 429 is never retried here: waiting out a rate limit belongs to the queue
 * layer (`queue.rateLimit`), where every worker sees it.
 */
import pRetry from 'p-retry';
import { PlatformError, RateLimitedError, ServerError } from './errors.js';

export interface RetryDecisionOptions {
  /** GET/PUT/OPTIONS are idempotent; POST is not. */
  idempotent: boolean;
}

/** Pure: may `err` be retried in-process? */
export function shouldRetry(err: unknown, { idempotent }: RetryDecisionOptions): boolean {
  if (!(err instanceof PlatformError)) return false;
  if (err instanceof RateLimitedError) return false;
  if (!err.retryable) return false;
  // A create that may have landed must be verified, not sent again.
  return idempotent || !err.mayHaveApplied;
}

export interface RetryOptions {
  /** Retries after the first attempt. Default 3. */
  retries?: number;
  /** Default 200 ms; doubled each time, times a random factor in [1, 2). */
  minTimeoutMs?: number;
  /** Default 5,000 ms. */
  maxTimeoutMs?: number;
  /** Default false: a request that may have been applied is not sent again. */
  idempotent?: boolean;
  signal?: AbortSignal;
  /** Called before each retry, with the error that caused it and the attempt that failed (1-based). */
  onRetry?: (err: PlatformError, attempt: number) => void;
}

/**
 * Runs `fn` until it succeeds, `shouldRetry` says no, or the retries are spent.
 * The final failure is the original error, never a wrapper. When the server
 * gave a `Retry-After` with a 5xx, the wait honours it (up to maxTimeoutMs).
 */
export async function withRetry<T>(
  fn: (attempt: number) => Promise<T>,
  opts: RetryOptions = {},
): Promise<T> {
  const idempotent = opts.idempotent ?? false;
  const maxTimeout = opts.maxTimeoutMs ?? 5_000;
  return pRetry(fn, {
    retries: opts.retries ?? 3,
    minTimeout: opts.minTimeoutMs ?? 200,
    maxTimeout,
    factor: 2,
    randomize: true,
    ...(opts.signal && { signal: opts.signal }),
    shouldRetry: async ({ error, attemptNumber }) => {
      if (!shouldRetry(error, { idempotent })) return false;
      const err = error as PlatformError;
      opts.onRetry?.(err, attemptNumber);
      if (err instanceof ServerError && err.retryAfterMs) {
        await sleep(Math.min(err.retryAfterMs, maxTimeout), opts.signal);
      }
      return true;
    },
  });
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
