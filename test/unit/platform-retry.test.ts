import { describe, expect, it, vi } from 'vitest';
import {
  BadRequestError,
  InvalidResponseError,
  NetworkError,
  RateLimitedError,
  ServerError,
  TimeoutError,
  UnauthorizedError,
  type PlatformError,
} from '../../src/platform/errors.js';
import { RETRY_DEFAULTS } from '../../src/config.js';
import { retrying, withRetry } from '../../src/platform/with-retry.js';
import type { Decision } from '../../src/platform/retry-policy.js';

const ctx = { method: 'POST', route: '/companies' };
const network = (mayHaveApplied: boolean) =>
  new NetworkError('reset', { ...ctx, retryable: true, mayHaveApplied });
const timeout = (mayHaveApplied: boolean) =>
  new TimeoutError('timeout', { ...ctx, retryable: true, mayHaveApplied });
const server = (status = 503, retryAfterMs: number | null = null) =>
  new ServerError(`${status}`, {
    ...ctx,
    statusCode: status,
    retryable: status !== 501,
    mayHaveApplied: true,
    retryAfterMs,
  });
const rateLimited = () =>
  new RateLimitedError('429', {
    ...ctx,
    statusCode: 429,
    retryable: true,
    mayHaveApplied: false,
    retryAfterMs: 1000,
  });
const badRequest = () =>
  new BadRequestError('400', {
    ...ctx,
    statusCode: 400,
    retryable: false,
    mayHaveApplied: false,
    fields: {},
  });
const unauthorized = () =>
  new UnauthorizedError('401', {
    ...ctx,
    statusCode: 401,
    retryable: false,
    mayHaveApplied: false,
  });
const invalid = () =>
  new InvalidResponseError('bad', { ...ctx, retryable: false, mayHaveApplied: true });

// The mechanism: what is retried and how long it waits is the policy's (retry-policy.test.ts).
const fast = { ...RETRY_DEFAULTS, requestMinDelayMs: 1, requestMaxDelayMs: 5 };

describe('withRetry', () => {
  it('fails twice, then succeeds', async () => {
    let calls = 0;
    const seen: number[] = [];
    const out = await withRetry(
      async () => {
        calls++;
        if (calls < 3) throw network(false);
        return 'ok';
      },
      { operation: 'create', settings: fast, onRetry: (_e, attempt) => seen.push(attempt) },
    );
    expect(out).toBe('ok');
    expect(calls).toBe(3);
    expect(seen).toEqual([1, 2]);
  });

  it("rethrows the original error when the policy's retries are spent", async () => {
    let calls = 0;
    const errors: PlatformError[] = [];
    const p = withRetry(
      async () => {
        calls++;
        const e = network(false);
        errors.push(e);
        throw e;
      },
      { operation: 'create', settings: { ...fast, requestRetries: 2 } },
    );
    const thrown = await p.catch((e: unknown) => e);
    expect(calls).toBe(3);
    expect(thrown).toBe(errors[2]);
    expect(thrown).toBeInstanceOf(NetworkError);
  });

  it('never retries a 429, a 400, a 401, an invalid response, or a POST that may have landed', async () => {
    for (const make of [
      rateLimited,
      badRequest,
      unauthorized,
      invalid,
      () => network(true),
      () => timeout(true),
      () => server(500),
    ]) {
      let calls = 0;
      const err = make();
      await expect(
        withRetry(
          async () => {
            calls++;
            throw err;
          },
          { operation: 'create', settings: fast },
        ),
      ).rejects.toBe(err);
      expect(calls).toBe(1);
    }
  });

  it('retries a 5xx, or a reset after sending, when the request is idempotent', async () => {
    for (const operation of ['update', 'list'] as const) {
      for (const make of [() => server(502), () => network(true), () => timeout(true)]) {
        let calls = 0;
        const out = await withRetry(
          async () => {
            if (++calls === 1) throw make();
            return calls;
          },
          { operation, settings: fast },
        );
        expect(out).toBe(2);
      }
    }
  });

  it('waits the delay the policy decided, Retry-After of a 5xx included', async () => {
    vi.useFakeTimers();
    try {
      let calls = 0;
      const decided: Decision[] = [];
      const p = withRetry(
        async () => {
          if (++calls === 1) throw server(503, 2_000);
          return calls;
        },
        {
          operation: 'update',
          settings: { ...RETRY_DEFAULTS, requestMinDelayMs: 100, requestMaxDelayMs: 10_000 },
          onRetry: (_e, _a, d) => decided.push(d),
        },
      );
      await vi.advanceTimersByTimeAsync(0);
      expect(calls).toBe(1);
      const [d] = decided as [Decision & { delayMs: number }];
      expect(d.action).toBe('retry-now');
      // The server's 2 s, then 100 ms × [1, 2).
      expect(d.delayMs).toBeGreaterThanOrEqual(2_100);
      expect(d.delayMs).toBeLessThan(2_200);
      await vi.advanceTimersByTimeAsync(d.delayMs - 1);
      expect(calls).toBe(1);
      await vi.advanceTimersByTimeAsync(1);
      await expect(p).resolves.toBe(2);
    } finally {
      vi.useRealTimers();
    }
  });

  it('stops when the signal aborts', async () => {
    const ac = new AbortController();
    let calls = 0;
    const p = withRetry(
      async () => {
        calls++;
        ac.abort(new Error('stop'));
        throw network(false);
      },
      { operation: 'create', settings: fast, signal: ac.signal },
    );
    await expect(p).rejects.toThrow('stop');
    expect(calls).toBe(1);
  });
});

describe('retrying', () => {
  it('asks its decider after every failure and stops on anything but retry-now', async () => {
    const asked: [unknown, number][] = [];
    let calls = 0;
    const decisions: Decision[] = [
      { action: 'retry-now', delayMs: 0 },
      { action: 'retry-now', delayMs: 1 },
      { action: 'retry-later', delayMs: 10_000 },
    ];
    const err = new Error('x');
    await expect(
      retrying(
        async () => {
          calls++;
          throw err;
        },
        (e, attempt) => {
          asked.push([e, attempt]);
          return decisions[attempt - 1]!;
        },
      ),
    ).rejects.toBe(err);
    expect(calls).toBe(3);
    expect(asked).toEqual([
      [err, 1],
      [err, 2],
      [err, 3],
    ]);
  });

  it('tries nothing once aborted, and ends with the reason when the signal aborts during a try', async () => {
    const before = new AbortController();
    before.abort(new Error('already'));
    let calls = 0;
    const never = retrying(
      async () => ++calls,
      () => ({ action: 'retry-now', delayMs: 0 }),
      { signal: before.signal },
    );
    await expect(never).rejects.toThrow('already');
    expect(calls).toBe(0);

    const during = new AbortController();
    const asked: unknown[] = [];
    const p = retrying(
      async () => {
        during.abort(new Error('shutdown'));
        return 'answered';
      },
      (e) => {
        asked.push(e);
        return { action: 'give-up', reason: 'aborted', after: 'attempts' };
      },
      { signal: during.signal },
    );
    await expect(p).rejects.toThrow('shutdown');
    expect(asked).toHaveLength(1);
  });

  it('ends with a TypeError for a thrown non-Error without asking the decider, as p-retry does', async () => {
    const asked: unknown[] = [];
    let calls = 0;
    const p = retrying(
      async () => {
        calls++;
        throw 'plain string';
      },
      (e) => {
        asked.push(e);
        return { action: 'retry-now', delayMs: 0 };
      },
    );
    await expect(p).rejects.toThrow(TypeError);
    await expect(p).rejects.toThrow('Non-error was thrown: "plain string"');
    expect(asked).toEqual([]);
    expect(calls).toBe(1);
  });

  it('never retries a TypeError that is not a network error (a bug, not a fault), at any try', async () => {
    for (const failFirst of [0, 1]) {
      let calls = 0;
      const bug = new TypeError('x is not a function');
      const p = retrying(
        async () => {
          calls++;
          if (calls <= failFirst) throw new Error('transient');
          throw bug;
        },
        () => ({ action: 'retry-now', delayMs: 0 }),
      );
      await expect(p).rejects.toBe(bug);
      expect(calls).toBe(failFirst + 1);
    }
  });
});
