import { describe, expect, it } from 'vitest';
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
import { shouldRetry, withRetry } from '../../src/platform/retry.js';

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

describe('shouldRetry', () => {
  it.each<[string, () => unknown, boolean, boolean]>([
    ['connection refused', () => network(false), true, true],
    ['reset after sending', () => network(true), true, false],
    ['timeout before sending', () => timeout(false), true, true],
    ['timeout after sending', () => timeout(true), true, false],
    ['503', () => server(503), true, false],
    ['501', () => server(501), false, false],
    ['429', rateLimited, false, false],
    ['400', badRequest, false, false],
    ['401', unauthorized, false, false],
    ['invalid response', invalid, false, false],
    ['a plain Error', () => new Error('bug'), false, false],
    ['a string', () => 'nope', false, false],
  ])('%s: idempotent %s, not idempotent %s', (_name, make, idempotent, notIdempotent) => {
    expect(shouldRetry(make(), { idempotent: true })).toBe(idempotent);
    expect(shouldRetry(make(), { idempotent: false })).toBe(notIdempotent);
  });
});

describe('withRetry', () => {
  const fast = { minTimeoutMs: 1, maxTimeoutMs: 5 };

  it('fails twice, then succeeds', async () => {
    let calls = 0;
    const seen: number[] = [];
    const out = await withRetry(
      async () => {
        calls++;
        if (calls < 3) throw network(false);
        return 'ok';
      },
      { ...fast, onRetry: (_e, attempt) => seen.push(attempt) },
    );
    expect(out).toBe('ok');
    expect(calls).toBe(3);
    expect(seen).toEqual([1, 2]);
  });

  it('rethrows the original error when retries are spent', async () => {
    let calls = 0;
    const errors: PlatformError[] = [];
    const p = withRetry(
      async () => {
        calls++;
        const e = network(false);
        errors.push(e);
        throw e;
      },
      { ...fast, retries: 2 },
    );
    const thrown = await p.catch((e: unknown) => e);
    expect(calls).toBe(3);
    expect(thrown).toBe(errors[2]);
    expect(thrown).toBeInstanceOf(NetworkError);
  });

  it('never retries a 429, a 400, or a POST that may have landed', async () => {
    for (const make of [rateLimited, badRequest, () => network(true), () => server(500)]) {
      let calls = 0;
      const err = make();
      await expect(
        withRetry(async () => {
          calls++;
          throw err;
        }, fast),
      ).rejects.toBe(err);
      expect(calls).toBe(1);
    }
  });

  it('retries a 5xx when the request is idempotent', async () => {
    let calls = 0;
    const out = await withRetry(
      async () => {
        if (++calls === 1) throw server(502);
        return calls;
      },
      { ...fast, idempotent: true },
    );
    expect(out).toBe(2);
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
      { ...fast, signal: ac.signal },
    );
    await expect(p).rejects.toThrow('stop');
    expect(calls).toBe(1);
  });
});
