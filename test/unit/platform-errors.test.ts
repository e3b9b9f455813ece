import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import {
  errorFromResponse,
  errorFromTransport,
  fieldMessages,
} from '../../src/platform/error-factory.js';
import {
  AbortedError,
  BadRequestError,
  ClientError,
  InvalidResponseError,
  NetworkError,
  NotFoundError,
  PlatformError,
  RateLimitedError,
  ServerError,
  TimeoutError,
  UnauthorizedError,
} from '../../src/platform/errors.js';

const ctx = { method: 'POST', route: '/companies/{id}', path: '/companies/7' };
const respond = (status: number, body = '', headers: Record<string, string> = {}) =>
  errorFromResponse({ ...ctx, status, body, headers, now: Date.UTC(2026, 0, 1) });

describe('errorFromResponse', () => {
  it.each([
    [400, BadRequestError, 'platform.bad-request', false, false],
    [401, UnauthorizedError, 'platform.unauthorized', false, false],
    [404, NotFoundError, 'platform.not-found', false, false],
    [429, RateLimitedError, 'platform.rate-limited', true, false],
    [500, ServerError, 'platform.server', true, true],
    [502, ServerError, 'platform.server', true, true],
    [503, ServerError, 'platform.server', true, true],
    [504, ServerError, 'platform.server', true, true],
    [501, ServerError, 'platform.server', false, true],
    [403, ClientError, 'platform.client', false, false],
    [405, ClientError, 'platform.client', false, false],
    [409, ClientError, 'platform.client', false, false],
    [408, ClientError, 'platform.client', true, false],
    [302, InvalidResponseError, 'platform.invalid-response', false, true],
  ] as const)('maps %i to its class', (status, cls, code, retryable, mayHaveApplied) => {
    const err = respond(status, '{"detail":"x"}');
    expect(err).toBeInstanceOf(cls);
    expect(err).toBeInstanceOf(PlatformError);
    expect(err.code).toBe(code);
    expect(err.statusCode).toBe(status);
    expect(err.retryable).toBe(retryable);
    expect(err.mayHaveApplied).toBe(mayHaveApplied);
    expect(err.method).toBe('POST');
    expect(err.route).toBe('/companies/{id}');
    expect(err.path).toBe('/companies/7');
    expect(err.name).toBe(cls.name);
  });

  it('reads DRF field messages from a 400', () => {
    const err = respond(
      400,
      JSON.stringify({
        name: ['This field is required.'],
        website: ['Enter a valid URL.', 'Too long.'],
      }),
    ) as BadRequestError;
    expect(err.fields).toEqual({
      name: ['This field is required.'],
      website: ['Enter a valid URL.', 'Too long.'],
    });
    expect(err.message).toContain('name: This field is required.');
    expect(err.message).toContain('website: Enter a valid URL. Too long.');
  });

  it('reads detail and non_field_errors', () => {
    const a = respond(400, '{"detail":"JSON parse error - Expecting value"}') as BadRequestError;
    expect(a.fields).toEqual({ detail: ['JSON parse error - Expecting value'] });
    expect(a.detail).toBe('JSON parse error - Expecting value');
    const b = respond(400, '{"non_field_errors":["Duplicate."]}') as BadRequestError;
    expect(b.fields).toEqual({ non_field_errors: ['Duplicate.'] });
    const c = respond(400, '["Something is wrong."]') as BadRequestError;
    expect(c.fields).toEqual({ non_field_errors: ['Something is wrong.'] });
  });

  it('keeps the detail of a 401 and 404 in the message', () => {
    const err = respond(401, '{"detail":"Invalid token."}');
    expect(err.detail).toBe('Invalid token.');
    expect(err.message).toContain('Invalid token.');
    expect(respond(404, '{"detail":"Not found."}').message).toContain('Not found.');
  });

  it('copes with an HTML body, an empty body and garbage', () => {
    const html = `<html><head><title>502 Bad Gateway</title></head><body>${'x'.repeat(5000)}</body></html>`;
    const err = respond(502, html);
    expect(err).toBeInstanceOf(ServerError);
    expect(err.body!.length).toBeLessThanOrEqual(300);
    expect(err.body).toContain('502 Bad Gateway');
    const empty = respond(400) as BadRequestError;
    expect(empty.fields).toEqual({});
    expect(empty.body).toBeUndefined();
    expect(respond(500, '\u0000\u0001{{{').code).toBe('platform.server');
    expect((respond(400, '<h1>Bad Request (400)</h1>') as BadRequestError).fields).toEqual({});
  });

  it('reads Retry-After as seconds and as an HTTP-date', () => {
    expect((respond(429, '', { 'retry-after': '7' }) as RateLimitedError).retryAfterMs).toBe(7000);
    const date = new Date(Date.UTC(2026, 0, 1) + 30_000).toUTCString();
    expect((respond(429, '', { 'retry-after': date }) as RateLimitedError).retryAfterMs).toBe(
      30_000,
    );
    expect((respond(429) as RateLimitedError).retryAfterMs).toBeNull();
    // Negative: no wait to honour (test/unit/retry-after.test.ts has the whole table).
    expect((respond(429, '', { 'retry-after': '-3' }) as RateLimitedError).retryAfterMs).toBeNull();
    expect((respond(503, '', { 'retry-after': '2' }) as ServerError).retryAfterMs).toBe(2000);
  });

  it('scrubs the key from body excerpts and details', () => {
    const key = 'k-very-secret-123';
    const err = errorFromResponse({
      ...ctx,
      status: 401,
      headers: {},
      body: JSON.stringify({ detail: `Invalid token ${key}` }),
      scrub: (s) => s.split(key).join('[REDACTED]'),
    });
    expect(JSON.stringify(err)).not.toContain(key);
    expect(inspect(err)).not.toContain(key);
    expect(err.message).toContain('[REDACTED]');
  });
});

describe('fieldMessages', () => {
  it('flattens nested and list serializer errors by path', () => {
    expect(
      fieldMessages({
        address: { city: ['Required.'] },
        items: [{}, { email: ['Enter a valid email address.'] }],
      }),
    ).toEqual({ 'address.city': ['Required.'], 'items.1.email': ['Enter a valid email address.'] });
  });
  it('never throws, whatever the body', () => {
    for (const body of [null, undefined, 42, true, 'text', [], {}, [[['deep']]], { a: null }]) {
      expect(() => fieldMessages(body)).not.toThrow();
    }
  });
});

describe('errorFromTransport', () => {
  const sent = { connect: 1, upload: 2 };
  const notSent = { connect: 1 };
  const t = (error: object, extra: { signal?: AbortSignal } = {}) =>
    errorFromTransport({ ...ctx, error, ...extra });

  it('connection refused and DNS failures were not applied', () => {
    for (const code of ['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN']) {
      const err = t({ code, message: `connect ${code}`, timings: {} });
      expect(err).toBeInstanceOf(NetworkError);
      expect(err.code).toBe('platform.network');
      expect(err.retryable).toBe(true);
      expect(err.mayHaveApplied).toBe(false);
    }
  });

  it('a reset after sending may have been applied; before sending it was not', () => {
    expect(t({ code: 'ECONNRESET', message: 'socket hang up', timings: sent }).mayHaveApplied).toBe(
      true,
    );
    expect(
      t({ code: 'ECONNRESET', message: 'socket hang up', timings: notSent }).mayHaveApplied,
    ).toBe(false);
    expect(t({ code: 'EPIPE', message: 'write EPIPE' }).mayHaveApplied).toBe(true);
    expect(t({ code: 'EPIPE', message: 'write EPIPE' }).retryable).toBe(true);
  });

  it('timeouts say whether the request had been sent', () => {
    const response = t({
      name: 'TimeoutError',
      code: 'ETIMEDOUT',
      event: 'request',
      message: 'Timeout',
      timings: sent,
    });
    expect(response).toBeInstanceOf(TimeoutError);
    expect(response.code).toBe('platform.timeout');
    expect(response.retryable).toBe(true);
    expect(response.mayHaveApplied).toBe(true);
    const connect = t({
      name: 'TimeoutError',
      code: 'ETIMEDOUT',
      event: 'connect',
      message: 'Timeout',
      timings: {},
    });
    expect(connect.mayHaveApplied).toBe(false);
  });

  it('an abort is an AbortedError whose cause is the reason', () => {
    const ac = new AbortController();
    const reason = new Error('shutting down');
    ac.abort(reason);
    const err = t(
      { name: 'AbortError', code: 'ERR_ABORTED', message: 'aborted', timings: sent },
      { signal: ac.signal },
    );
    expect(err).toBeInstanceOf(AbortedError);
    expect(err.code).toBe('platform.aborted');
    expect(err.cause).toBe(reason);
    expect(err.retryable).toBe(false);
  });

  it('keeps only code and message of the original error, never its options', () => {
    const key = 'secret-key-abc';
    const gotLike = {
      name: 'RequestError',
      code: 'ECONNRESET',
      message: 'read ECONNRESET',
      options: { headers: { authorization: key } },
      request: { headers: { authorization: key } },
    };
    const err = t(gotLike);
    const cause = err.cause as Error & { code: string };
    expect(cause.message).toBe('ECONNRESET: read ECONNRESET');
    expect(cause.code).toBe('ECONNRESET');
    expect(inspect(err, { depth: 10 })).not.toContain(key);
    expect(JSON.stringify(err)).not.toContain(key);
  });

  it('an unknown failure is not retried', () => {
    const err = t({ code: 'ERR_SSL_WRONG_VERSION_NUMBER', message: 'wrong version number' });
    expect(err).toBeInstanceOf(NetworkError);
    expect(err.retryable).toBe(false);
  });
});
