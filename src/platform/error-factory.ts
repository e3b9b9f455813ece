/**
 * The one place that picks a PlatformError class: from a non-2xx response
 * (status, headers, body of any shape) or from a failure with no response
 * (timeout, reset, refused, abort). Text from the wire is scrubbed of the key
 * and cut to a short excerpt; transport errors are reduced to code and message.
 */
import {
  AbortedError,
  BadRequestError,
  ClientError,
  InvalidResponseError,
  NetworkError,
  NotFoundError,
  RateLimitedError,
  ServerError,
  TimeoutError,
  UnauthorizedError,
  type PlatformError,
  type RequestContext,
  type Scrub,
} from './errors.js';
import { parseRetryAfter } from './retry-after.js';

// ---------------------------------------------------------------------------
// Response → error

const EXCERPT_CHARS = 300;
const MAX_FIELDS = 50;
const MAX_MESSAGES = 10;

export interface ResponseInput extends RequestContext {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The raw body as received; may be empty, HTML, JSON or anything. */
  body: string;
  /** Removes secrets (the API key) from text taken off the wire. */
  scrub?: Scrub;
  /** For Retry-After dates; defaults to Date.now(). */
  now?: number;
}

/** Maps a non-2xx response to its error. Never throws, whatever the body. */
export function errorFromResponse(input: ResponseInput): PlatformError {
  const scrub = input.scrub ?? ((s: string) => s);
  const { status } = input;
  const ctx: RequestContext = {
    method: input.method,
    route: input.route,
    path: input.path ?? input.route,
  };
  const parsed = parseJson(input.body);
  const body = excerpt(scrub(input.body));
  const detail = detailOf(parsed, scrub);
  const base = { ...ctx, statusCode: status, ...(body && { body }), ...(detail && { detail }) };
  const where = `${ctx.method} ${ctx.path}`;
  const said = detail
    ? `: ${detail}`
    : body && parsed === undefined
      ? `: ${oneLine(body, 120)}`
      : '';

  if (status === 400) {
    const fields = fieldMessages(parsed, scrub);
    const summary = Object.entries(fields)
      .map(([k, v]) => `${k}: ${v.join(' ')}`)
      .join('; ');
    return new BadRequestError(
      `${where} → 400 Bad Request${summary ? `: ${oneLine(summary, 500)}` : said}`,
      {
        ...base,
        retryable: false,
        mayHaveApplied: false,
        fields,
      },
    );
  }
  if (status === 401) {
    return new UnauthorizedError(`${where} → 401 Unauthorized (check the API key)${said}`, {
      ...base,
      retryable: false,
      mayHaveApplied: false,
    });
  }
  if (status === 404) {
    return new NotFoundError(`${where} → 404 Not Found${said}`, {
      ...base,
      retryable: false,
      mayHaveApplied: false,
    });
  }
  if (status === 429) {
    const retryAfterMs =
      parseRetryAfter(input.headers['retry-after'], input.now ?? Date.now()) ?? null;
    const wait = retryAfterMs === null ? '' : ` (retry after ${retryAfterMs} ms)`;
    return new RateLimitedError(`${where} → 429 Too Many Requests${wait}${said}`, {
      ...base,
      retryable: true,
      mayHaveApplied: false,
      retryAfterMs,
    });
  }
  if (status >= 500 && status <= 599) {
    // 501 and 505 say the server cannot do this at all; the rest may pass.
    const retryable = status !== 501 && status !== 505;
    return new ServerError(`${where} → ${status} server error${said}`, {
      ...base,
      retryable,
      mayHaveApplied: true,
      retryAfterMs: parseRetryAfter(input.headers['retry-after'], input.now ?? Date.now()) ?? null,
    });
  }
  if (status >= 400 && status <= 499) {
    // 408: the server gave up waiting for our request, so it was not applied.
    return new ClientError(`${where} → ${status}${said}`, {
      ...base,
      retryable: status === 408,
      mayHaveApplied: false,
    });
  }
  // 1xx/3xx: we follow no redirects (a redirect could carry the key elsewhere).
  return new InvalidResponseError(`${where} → unexpected status ${status}`, {
    ...base,
    retryable: false,
    mayHaveApplied: true,
  });
}

/**
 * DRF error bodies to field messages: `{"name": ["This field is required."]}`,
 * `{"detail": "…"}`, `{"non_field_errors": [...]}`, nested serializers
 * (`{"address": {"city": [...]}}` → `address.city`) and list serializers
 * (`[{"email": [...]}]` → `0.email`). A bare string or list of strings is
 * filed under `non_field_errors`, as DRF names errors that belong to no field.
 */
export function fieldMessages(body: unknown, scrub: Scrub = (s) => s): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  const add = (key: string, msg: string) => {
    const list = out[key] ?? (Object.keys(out).length < MAX_FIELDS ? (out[key] = []) : undefined);
    if (list && list.length < MAX_MESSAGES) list.push(oneLine(scrub(msg), 300));
  };
  const walk = (value: unknown, key: string, depth: number): void => {
    if (value === null || value === undefined || depth > 6) return;
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
      add(key || 'non_field_errors', String(value));
    } else if (Array.isArray(value)) {
      value.forEach((item, i) =>
        walk(item, isScalar(item) ? key : key ? `${key}.${i}` : String(i), depth + 1),
      );
    } else if (typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) walk(v, key ? `${key}.${k}` : k, depth + 1);
    }
  };
  walk(body, '', 0);
  return out;
}

// ---------------------------------------------------------------------------
// Transport failure → error

/** What a transport error (got's RequestError or a Node socket error) may carry. */
interface TransportFailure {
  name?: unknown;
  code?: unknown;
  message?: unknown;
  /** got's TimeoutError: which phase timed out. */
  event?: unknown;
  /** got's timings: `upload` is set once the whole request was written. */
  timings?: { connect?: number; upload?: number; response?: number };
}

/** Never connected: nothing was sent, so nothing can have been applied. */
const NOT_CONNECTED = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'EADDRNOTAVAIL',
]);
/** Cut mid-flight: transient, and the server may have acted on what it read. */
const CUT = new Set([
  'ECONNRESET',
  'EPIPE',
  'ECONNABORTED',
  'ERR_STREAM_PREMATURE_CLOSE',
  'EPROTO',
]);
const TIMEOUT_BEFORE_SENDING = new Set(['lookup', 'connect', 'secureConnect', 'socket']);

export interface TransportInput extends RequestContext {
  error: unknown;
  /** The caller's signal, to tell an abort from a timeout. */
  signal?: AbortSignal;
  scrub?: Scrub;
}

/**
 * Maps a failure without a response to its error. The original error is not
 * attached (got's carries the request headers, hence the key): the cause is a
 * fresh Error holding only its code and scrubbed message.
 */
export function errorFromTransport(input: TransportInput): PlatformError {
  const scrub = input.scrub ?? ((s: string) => s);
  const f = (
    typeof input.error === 'object' && input.error !== null ? input.error : {}
  ) as TransportFailure;
  const code = typeof f.code === 'string' ? f.code : 'UNKNOWN';
  const rawMessage = typeof f.message === 'string' ? f.message : String(input.error);
  const message = oneLine(scrub(rawMessage), 200);
  const ctx: RequestContext = {
    method: input.method,
    route: input.route,
    path: input.path ?? input.route,
  };
  const where = `${ctx.method} ${ctx.path}`;
  // Without timings we cannot prove the request was not sent: assume it was.
  const sent = f.timings ? f.timings.upload !== undefined : true;
  const cause = Object.assign(new Error(`${code}: ${message}`), { code });

  if (input.signal?.aborted || code === 'ERR_ABORTED') {
    return new AbortedError(`${where} aborted`, {
      ...ctx,
      retryable: false,
      mayHaveApplied: sent,
      cause: input.signal?.reason ?? cause,
    });
  }
  if (f.name === 'TimeoutError' || code === 'ETIMEDOUT') {
    const event = typeof f.event === 'string' ? f.event : undefined;
    const before = (event !== undefined && TIMEOUT_BEFORE_SENDING.has(event)) || !sent;
    return new TimeoutError(`${where} timed out${event ? ` (${event})` : ''}: ${message}`, {
      ...ctx,
      retryable: true,
      mayHaveApplied: !before,
      cause,
    });
  }
  if (NOT_CONNECTED.has(code)) {
    return new NetworkError(`${where} failed: ${message}`, {
      ...ctx,
      retryable: true,
      mayHaveApplied: false,
      cause,
    });
  }
  if (CUT.has(code) || f.name === 'ReadError' || /socket hang up/i.test(rawMessage)) {
    return new NetworkError(`${where} failed: ${message}`, {
      ...ctx,
      retryable: true,
      mayHaveApplied: sent,
      cause,
    });
  }
  // Unknown failures (TLS, protocol) are not known to pass on a retry.
  return new NetworkError(`${where} failed: ${message}`, {
    ...ctx,
    retryable: false,
    mayHaveApplied: sent,
    cause,
  });
}

// ---------------------------------------------------------------------------
// helpers

function parseJson(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function detailOf(body: unknown, scrub: Scrub): string | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const d = (body as Record<string, unknown>).detail;
  return typeof d === 'string' ? oneLine(scrub(d), 300) : undefined;
}

function isScalar(v: unknown): boolean {
  return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';
}

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

function excerpt(text: string): string {
  return oneLine(text, EXCERPT_CHARS);
}
