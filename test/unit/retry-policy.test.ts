/**
 * The retry and outcome policy's whole decision table: every platform error
 * class (built by the error factory, as the client meets them) × operation
 * (create is the one that is not idempotent) × where the fault stands: the
 * first in-process try, the last in-process try allowed, one over it, the
 * durable layer with attempts left, and its last attempt. Then the 429 cap,
 * a CRM page, a run, the delays and the reasons.
 */
import { Backoffs } from 'bullmq';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RETRY_DEFAULTS } from '../../src/config.js';
import { errorFromResponse, errorFromTransport } from '../../src/platform/error-factory.js';
import {
  CrossOriginError,
  InvalidRequestError,
  InvalidResponseError,
  ServerError,
  type PlatformError,
} from '../../src/platform/errors.js';
import {
  decide,
  IDEMPOTENT,
  jitterOf,
  rateLimitDecision,
  UNAUTHORIZED_MESSAGE,
  writeRetryDelay,
  type Action,
  type Attempt,
  type Decision,
  type Operation,
  type PageFault,
  type RetrySettings,
} from '../../src/platform/retry-policy.js';

const S: RetrySettings = RETRY_DEFAULTS;
const post = { method: 'POST', route: '/companies' };
const put = { method: 'PUT', route: '/companies/{id}', path: '/companies/42' };

const response = (status: number, body = '', headers: Record<string, string> = {}) =>
  errorFromResponse({ ...post, status, headers, body });
const transport = (code: string, extra: Record<string, unknown> = {}) =>
  errorFromTransport({ ...post, error: { code, message: code, ...extra } });

/** Each error as the client raises it for a POST or PUT (the flags it carries are the factory's). */
const ERRORS: Record<string, () => unknown> = {
  '400 bad request': () => response(400, '{"name":["This field is required."]}'),
  '401 unauthorized': () => response(401, '{"detail":"Invalid token."}'),
  '404 not found': () => response(404, '{"detail":"Not found."}'),
  '408 request timeout': () => response(408),
  '409 conflict': () => response(409, '{"detail":"Conflict."}'),
  '429 rate limited': () => response(429, '', { 'retry-after': '2' }),
  '503 unavailable': () => response(503, '', { 'retry-after': '1' }),
  '501 not implemented': () => response(501),
  'timeout before sending': () =>
    transport('ETIMEDOUT', { name: 'TimeoutError', event: 'connect', timings: {} }),
  'timeout after sending': () =>
    transport('ETIMEDOUT', { name: 'TimeoutError', event: 'response', timings: { upload: 1 } }),
  'connection refused': () => transport('ECONNREFUSED'),
  'connection reset after sending': () => transport('ECONNRESET', { timings: { upload: 1 } }),
  'unknown transport failure': () => transport('ERR_TLS_CERT_ALTNAME_INVALID'),
  'invalid response': () =>
    new InvalidResponseError('bad body', { ...post, retryable: false, mayHaveApplied: true }),
  'invalid request': () =>
    new InvalidRequestError('bad', {
      ...post,
      retryable: false,
      mayHaveApplied: false,
      issues: [],
    }),
  'cross origin': () =>
    new CrossOriginError('elsewhere', { ...post, retryable: false, mayHaveApplied: false }),
  'aborted after sending': () =>
    errorFromTransport({
      ...post,
      error: { code: 'ERR_ABORTED', timings: { upload: 1 } },
      signal: AbortSignal.abort(),
    }),
  'aborted before sending': () =>
    errorFromTransport({
      ...post,
      error: { code: 'ERR_ABORTED', timings: {} },
      signal: AbortSignal.abort(),
    }),
  'not a platform error (Redis down)': () => new Error('Connection is closed.'),
  'a thrown string': () => 'nope',
};

/**
 * Where the fault stands. In-process: tries 1, 3 (the last of
 * `requestRetries` = 3) and 4 (over it). Durable: the write processor or a
 * listing's caller asks once the in-process layer is done, on attempt 1 of 8
 * and on the last, 8 of 8. No 429 came before (the 429 cap is below).
 */
const STAGES: Record<string, Omit<Attempt, 'operation'>> = {
  'try 1': { attempt: 1, durableAttempt: 1, durableAttempts: 8 },
  'try 3': { attempt: 3, durableAttempt: 1, durableAttempts: 8 },
  'try 4': { attempt: 4, durableAttempt: 1, durableAttempts: 8 },
  'attempt 1/8': { durableAttempt: 1, durableAttempts: 8 },
  'attempt 8/8': { durableAttempt: 8, durableAttempts: 8 },
};

type Row = [error: string, create: Action[], update: Action[], list: Action[]];
const all = (a: Action): Action[] => [a, a, a, a, a];
// Transient and resendable: now, now, later (over the in-process cap), later, then the end.
const WRITE_TRANSIENT: Action[] = [
  'retry-now',
  'retry-now',
  'retry-later',
  'retry-later',
  'give-up',
];
const LIST_TRANSIENT: Action[] = ['retry-now', 'retry-now', 'give-up', 'give-up', 'give-up'];
const ABORTED: Action[] = ['retry-later', 'retry-later', 'retry-later', 'retry-later', 'give-up'];

const TABLE: Row[] = [
  ['400 bad request', all('reject'), all('reject'), all('fail-run')],
  ['401 unauthorized', all('fail-run'), all('fail-run'), all('fail-run')],
  ['404 not found', all('reject'), all('reject'), all('fail-run')],
  ['408 request timeout', WRITE_TRANSIENT, WRITE_TRANSIENT, LIST_TRANSIENT],
  ['409 conflict', all('reject'), all('reject'), all('fail-run')],
  ['429 rate limited', all('pause-queue'), all('pause-queue'), all('pause-queue')],
  // A 5xx may have applied: a create is verified, never sent again.
  ['503 unavailable', all('settle-unknown'), WRITE_TRANSIENT, LIST_TRANSIENT],
  ['501 not implemented', all('settle-unknown'), all('reject'), all('fail-run')],
  ['timeout before sending', WRITE_TRANSIENT, WRITE_TRANSIENT, LIST_TRANSIENT],
  ['timeout after sending', all('settle-unknown'), WRITE_TRANSIENT, LIST_TRANSIENT],
  ['connection refused', WRITE_TRANSIENT, WRITE_TRANSIENT, LIST_TRANSIENT],
  ['connection reset after sending', all('settle-unknown'), WRITE_TRANSIENT, LIST_TRANSIENT],
  ['unknown transport failure', all('settle-unknown'), all('reject'), all('fail-run')],
  ['invalid response', all('settle-unknown'), all('reject'), all('fail-run')],
  ['invalid request', all('reject'), all('reject'), all('fail-run')],
  ['cross origin', all('reject'), all('reject'), all('fail-run')],
  // A shutdown's abort is no refusal: the write ends as a failed attempt.
  ['aborted after sending', all('settle-unknown'), ABORTED, all('fail-run')],
  ['aborted before sending', ABORTED, ABORTED, all('fail-run')],
  // BullMQ's attempts bound these; a job it gives up on is settled as abandoned.
  ['not a platform error (Redis down)', all('retry-later'), all('retry-later'), all('fail-run')],
  ['a thrown string', all('retry-later'), all('retry-later'), all('fail-run')],
];

describe('decide: the table of platform requests', () => {
  it('covers every error above', () => {
    expect(TABLE.map((r) => r[0]).sort()).toEqual(Object.keys(ERRORS).sort());
  });

  const cases = TABLE.flatMap(([error, ...byOp]) =>
    (['create', 'update', 'list'] as const).flatMap((operation, i) =>
      Object.keys(STAGES).map((stage, j) => [error, operation, stage, byOp[i]![j]!] as const),
    ),
  );
  it.each(cases)('%s × %s at %s → %s', (error, operation, stage, expected) => {
    const d = decide(ERRORS[error]!(), { operation, ...STAGES[stage], random: 0.5 }, S);
    expect(d.action).toBe(expected);
  });

  it('knows a create is the one operation that is not idempotent', () => {
    expect(IDEMPOTENT).toEqual({
      create: false,
      update: true,
      list: true,
      'read-page': true,
      run: true,
    });
  });
});

describe('decide: the 429 cap (RATE_LIMIT_MAX_RETRIES)', () => {
  const err = () => response(429, '', { 'retry-after': '2' });
  it.each<[Operation, number, Action]>([
    ['create', 0, 'pause-queue'],
    ['create', S.rateLimitMaxRetries - 1, 'pause-queue'],
    ['create', S.rateLimitMaxRetries, 'give-up'],
    ['update', S.rateLimitMaxRetries - 1, 'pause-queue'],
    ['update', S.rateLimitMaxRetries, 'give-up'],
    ['list', S.rateLimitMaxRetries - 1, 'pause-queue'],
    ['list', S.rateLimitMaxRetries + 5, 'give-up'],
  ])('%s after %i 429s in a row → %s', (operation, rateLimited, expected) => {
    const d = decide(err(), { operation, rateLimited, durableAttempt: 1 }, S);
    expect(d.action).toBe(expected);
  });

  it('pauses for the Retry-After, or rateLimitWaitMs without one; gives up naming the count', () => {
    expect(decide(err(), { operation: 'create' }, S)).toEqual({
      action: 'pause-queue',
      delayMs: 2_000,
    });
    expect(decide(response(429), { operation: 'list' }, S)).toEqual({
      action: 'pause-queue',
      delayMs: S.rateLimitWaitMs,
    });
    expect(
      decide(err(), { operation: 'update', rateLimited: 3 }, { ...S, rateLimitMaxRetries: 3 }),
    ).toEqual({
      action: 'give-up',
      after: 'rate-limits',
      reason:
        'rate limited by the platform 4 times in a row (last Retry-After 2000 ms); giving up on this write',
    });
  });

  it('gives a listing up naming the listing, not a write', () => {
    expect(
      decide(err(), { operation: 'list', rateLimited: 3 }, { ...S, rateLimitMaxRetries: 3 }),
    ).toEqual({
      action: 'give-up',
      after: 'rate-limits',
      reason:
        'rate limited by the platform 4 times in a row (last Retry-After 2000 ms); while listing',
    });
  });

  it('is the same rule the queue limiter asks with only a Retry-After', () => {
    for (const rateLimited of [0, 19, 20]) {
      expect(rateLimitDecision(2_000, { operation: 'create', rateLimited }, S)).toEqual(
        decide(err(), { operation: 'create', rateLimited }, S),
      );
    }
  });
});

describe('decide: the reasons', () => {
  it('rejects in the platform words: field messages, the field, a detail, a record gone', () => {
    expect(decide(ERRORS['400 bad request']!(), { operation: 'create' }, S)).toEqual({
      action: 'reject',
      reason: 'platform said 400: name: This field is required.',
      field: 'name',
    });
    expect(decide(ERRORS['409 conflict']!(), { operation: 'create' }, S)).toStrictEqual({
      action: 'reject',
      reason: 'platform said 409: Conflict.',
    });
    const gone = errorFromResponse({ ...put, status: 404, headers: {}, body: '' });
    expect(decide(gone, { operation: 'update', platformId: 42 }, S)).toEqual({
      action: 'reject',
      reason: 'platform record 42 no longer exists (404)',
    });
  });

  it('says a record is gone only for a 404 of an update, and joins every field message', () => {
    const invalid = errorFromResponse({
      ...put,
      status: 400,
      headers: {},
      body: '{"name":["This field is required.","Too short."],"website":["Enter a valid URL."]}',
    });
    expect(decide(invalid, { operation: 'update', platformId: 42 }, S)).toEqual({
      action: 'reject',
      reason:
        'platform said 400: name: This field is required. Too short.; website: Enter a valid URL.',
      field: 'name',
    });
    expect(decide(ERRORS['404 not found']!(), { operation: 'create' }, S)).toEqual({
      action: 'reject',
      reason: 'platform said 404: Not found.',
    });
  });

  it('rejects in its own words when no answer came: the platform said nothing', () => {
    const refusedBody = new InvalidRequestError(
      'PUT /companies/42: invalid request body: name: Too long',
      { ...put, retryable: false, mayHaveApplied: false, issues: ['name: Too long'] },
    );
    const badCertificate = errorFromTransport({
      ...put,
      error: { code: 'ERR_TLS_CERT_ALTNAME_INVALID', message: 'Hostname does not match' },
    });
    for (const operation of ['create', 'update'] as const) {
      expect(decide(refusedBody, { operation }, S)).toStrictEqual({
        action: 'reject',
        reason: 'PUT /companies/42: invalid request body: name: Too long',
      });
    }
    expect(decide(badCertificate, { operation: 'update' }, S)).toStrictEqual({
      action: 'reject',
      reason: 'PUT /companies/42 failed: Hostname does not match',
    });
  });

  it('leaves a create that may have landed to the listing, and says so', () => {
    expect(decide(ERRORS['timeout after sending']!(), { operation: 'create' }, S)).toStrictEqual({
      action: 'settle-unknown',
      reason: 'create outcome unknown; it will be verified by listing',
    });
  });

  it('fails the run on a 401 naming the API key, wherever it comes', () => {
    for (const operation of ['create', 'update', 'list', 'run'] as const) {
      expect(decide(ERRORS['401 unauthorized']!(), { operation }, S)).toEqual({
        action: 'fail-run',
        reason: UNAUTHORIZED_MESSAGE,
      });
    }
    expect(UNAUTHORIZED_MESSAGE).toMatch(/API key/);
  });

  it('gives a write up after its last attempt with the attempts and the error', () => {
    const err = ERRORS['connection refused']!() as PlatformError;
    expect(decide(err, { operation: 'update', durableAttempt: 5, durableAttempts: 5 }, S)).toEqual({
      action: 'give-up',
      after: 'attempts',
      reason: `gave up after 5 attempts: ${err.message}`,
    });
  });

  it('gives a listing up after its in-process retries, naming the attempts cap', () => {
    const err = ERRORS['connection refused']!() as PlatformError;
    expect(decide(err, { operation: 'list', attempt: S.requestRetries + 1 }, S)).toEqual({
      action: 'give-up',
      after: 'attempts',
      reason: err.message,
    });
  });

  it("counts a write's attempts against the job's own, else writeAttempts", () => {
    const err = ERRORS['connection refused']!();
    expect(decide(err, { operation: 'create', durableAttempt: 7 }, S).action).toBe('retry-later');
    expect(decide(err, { operation: 'create', durableAttempt: 8 }, S).action).toBe('give-up');
    expect(
      decide(err, { operation: 'create', durableAttempt: 8 }, { ...S, writeAttempts: 9 }).action,
    ).toBe('retry-later');
  });
});

describe('decide: delays', () => {
  it('backs off in-process as min × 2^(try − 1) × (1 + random), capped', () => {
    const err = ERRORS['connection refused']!();
    const at = (attempt: number, random: number) =>
      decide(err, { operation: 'list', attempt, random }, { ...S, requestRetries: 10 });
    expect(at(1, 0)).toEqual({ action: 'retry-now', delayMs: 200 });
    expect(at(2, 0)).toEqual({ action: 'retry-now', delayMs: 400 });
    expect(at(2, 0.5)).toEqual({ action: 'retry-now', delayMs: 600 });
    expect(at(8, 0)).toEqual({ action: 'retry-now', delayMs: 5_000 });
    // The factor stays under 2 at the top of the draw: never the next try's wait.
    expect(at(1, 0.9999)).toEqual({ action: 'retry-now', delayMs: 399 });
  });

  it("waits a 5xx's Retry-After (capped at requestMaxDelayMs) before the backoff", () => {
    const err = response(503, '', { 'retry-after': '1' });
    expect(decide(err, { operation: 'update', attempt: 1, random: 0 }, S)).toEqual({
      action: 'retry-now',
      delayMs: 1_000 + 200,
    });
    const long = response(503, '', { 'retry-after': '120' });
    expect(decide(long, { operation: 'update', attempt: 1, random: 0 }, S)).toEqual({
      action: 'retry-now',
      delayMs: 5_000 + 200,
    });
  });

  it('waits before a write attempt exactly as BullMQ exponential backoff with jitter 0.5 did', () => {
    const random = vi.spyOn(Math, 'random');
    for (const r of [0, 0.25, 0.999]) {
      random.mockReturnValue(r);
      const bullmq = Backoffs.builtinStrategies.exponential!(S.writeBackoffMs, 0.5);
      for (const attempt of [1, 2, 5, 7]) {
        expect(writeRetryDelay(attempt, S, r)).toBe(bullmq(attempt));
      }
    }
    random.mockRestore();
    const err = ERRORS['connection refused']!();
    expect(
      decide(err, { operation: 'create', durableAttempt: 3, durableAttempts: 8, random: 0.5 }, S),
    ).toEqual({ action: 'retry-later', delayMs: writeRetryDelay(3, S, 0.5) });
  });

  it('draws the jitter as FNV-1a (32 bits) of the key over 2^32', () => {
    // The published FNV-1a test vectors.
    expect(jitterOf('')).toBe(0x811c9dc5 / 2 ** 32);
    expect(jitterOf('a')).toBe(0xe40c292c / 2 ** 32);
    expect(jitterOf('foobar')).toBe(0xbf9cf968 / 2 ** 32);
  });

  it('draws a write job jitter from its id and attempt: same key, same draw; in [0, 1)', () => {
    expect(jitterOf('run-1-2-0:3')).toBe(jitterOf('run-1-2-0:3'));
    expect(jitterOf('run-1-2-0:3')).not.toBe(jitterOf('run-1-2-0:4'));
    for (const k of ['', 'a', 'run-x-1-0:1', 'run-x-99999-3:8']) {
      expect(jitterOf(k)).toBeGreaterThanOrEqual(0);
      expect(jitterOf(k)).toBeLessThan(1);
    }
  });
});

describe('decide: a CRM page (read-page)', () => {
  const fault = (retryable: boolean, retryAfterMs: number | null = null): PageFault => ({
    kind: 'page-fault',
    retryable,
    detail: 'GET answered HTTP 503',
    retryAfterMs,
  });
  const page = { attempts: 3, minDelayMs: 100, maxDelayMs: 1_000 };

  it.each<[string, unknown, number, Action]>([
    ['a transient fault, try 1 of 3', fault(true), 1, 'retry-now'],
    ['a transient fault, try 2 of 3', fault(true), 2, 'retry-now'],
    ['a transient fault, try 3 of 3', fault(true), 3, 'fail-run'],
    ['a transient fault, over the attempts', fault(true), 4, 'fail-run'],
    ['a final status', fault(false), 1, 'fail-run'],
    ['a platform error', ERRORS['503 unavailable']!(), 1, 'fail-run'],
    ['anything else', new Error('bug'), 1, 'fail-run'],
  ])('%s → %s', (_name, err, attempt, expected) => {
    expect(decide(err, { operation: 'read-page', attempt, page, random: 0 }, S).action).toBe(
      expected,
    );
  });

  it("waits the CRM's Retry-After (capped), then the backoff; never pauses the platform queue", () => {
    const d = (f: PageFault, attempt: number) =>
      decide(f, { operation: 'read-page', attempt, page, random: 0 }, S);
    expect(d(fault(true, 300), 1)).toEqual({ action: 'retry-now', delayMs: 300 + 100 });
    expect(d(fault(true, 60_000), 2)).toEqual({ action: 'retry-now', delayMs: 1_000 + 200 });
    expect(d(fault(true), 2)).toEqual({ action: 'retry-now', delayMs: 200 });
  });

  it('fails the run on a thrown null, without reading it', () => {
    expect(decide(null, { operation: 'read-page', attempt: 1, page }, S)).toEqual({
      action: 'fail-run',
      reason: 'null',
    });
  });

  it('fails the run on a thrown undefined, without reading it', () => {
    expect(decide(undefined, { operation: 'read-page', attempt: 1, page }, S)).toEqual({
      action: 'fail-run',
      reason: 'undefined',
    });
  });

  it("takes settings.page when the source gives no retry, and ends with the fault's detail", () => {
    const d = decide(fault(true), { operation: 'read-page', attempt: S.page.attempts }, S);
    expect(d).toEqual({ action: 'fail-run', reason: 'GET answered HTTP 503' });
    expect(
      decide(fault(true), { operation: 'read-page', attempt: S.page.attempts - 1 }, S).action,
    ).toBe('retry-now');
  });
});

describe('decide: a fault that reached a run', () => {
  const transient: Record<string, () => unknown> = {
    '503': ERRORS['503 unavailable']!,
    timeout: ERRORS['timeout after sending']!,
    'connection refused': ERRORS['connection refused']!,
    '429 (its listing gave up)': ERRORS['429 rate limited']!,
  };

  it.each(Object.keys(transient))(
    '%s: paused with a doubling wait, then failed past RUN_RETRIES',
    (name) => {
      const err = transient[name]!();
      const waits = [1, 2, 3, 5, 6, 20].map((pauses) =>
        decide(err, { operation: 'run', durableAttempt: pauses }, S),
      );
      expect(waits).toEqual(
        [2_000, 4_000, 8_000, 32_000, 60_000, 60_000].map((delayMs) => ({
          action: 'retry-later',
          delayMs,
        })),
      );
      expect(decide(err, { operation: 'run', durableAttempt: S.runRetries + 1 }, S)).toEqual({
        action: 'fail-run',
        reason: (err as Error).message,
      });
    },
  );

  it.each<[string, unknown]>([
    ['400', ERRORS['400 bad request']!()],
    ['501', ERRORS['501 not implemented']!()],
    ['invalid response', ERRORS['invalid response']!()],
    [
      'a CRM source error, even a retryable one',
      Object.assign(new Error('page 2: 503'), { retryable: true }),
    ],
    ['anything else', new Error('bug')],
  ])('%s: fails the run with its message at once', (_name, err) => {
    expect(decide(err, { operation: 'run', durableAttempt: 1 }, S)).toEqual({
      action: 'fail-run',
      reason: (err as Error).message,
    });
  });

  it('takes its numbers from the settings', () => {
    const err = ERRORS['503 unavailable']!();
    const s = { ...S, runRetries: 2, runBackoffMs: 10, runBackoffMaxMs: 30 };
    expect(decide(err, { operation: 'run', durableAttempt: 1 }, s)).toEqual({
      action: 'retry-later',
      delayMs: 20,
    });
    expect(decide(err, { operation: 'run', durableAttempt: 2 }, s)).toEqual({
      action: 'retry-later',
      delayMs: 30,
    });
    expect(decide(err, { operation: 'run', durableAttempt: 3 }, s).action).toBe('fail-run');
    expect(
      decide(err, { operation: 'run', durableAttempt: 1 }, { ...S, runRetries: 0 }).action,
    ).toBe('fail-run');
  });
});

describe('decide: the in-process cap (PLATFORM_RETRIES)', () => {
  it('allows exactly requestRetries retries of a resendable fault, then hands over', () => {
    const err = ERRORS['connection refused']!();
    const actions = (s: RetrySettings): Decision['action'][] =>
      [1, 2, 3, 4].map((attempt) => decide(err, { operation: 'update', attempt }, s).action);
    expect(actions({ ...S, requestRetries: 2 })).toEqual([
      'retry-now',
      'retry-now',
      'retry-later',
      'retry-later',
    ]);
    expect(actions({ ...S, requestRetries: 0 })).toEqual([
      'retry-later',
      'retry-later',
      'retry-later',
      'retry-later',
    ]);
  });

  it('waits the backoff alone for a 5xx without Retry-After', () => {
    const err = new ServerError('503', {
      ...put,
      statusCode: 503,
      retryable: true,
      mayHaveApplied: true,
      retryAfterMs: null,
    });
    expect(decide(err, { operation: 'update', attempt: 1, random: 0 }, S)).toEqual({
      action: 'retry-now',
      delayMs: 200,
    });
  });
});

afterEach(() => {
  vi.restoreAllMocks();
});
