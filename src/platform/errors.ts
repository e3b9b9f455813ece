/**
 * Errors of the platform client, modelled on stripe-node's `src/Error.ts`:
 * one class per kind, each with a stable string `code`. The factories that
 * pick a class (from an HTTP response, from a transport failure) live in
 * error-factory.ts.
 *
 * Two flags steer callers: `retryable` says whether sending the same request
 * again can help; `mayHaveApplied` says whether a non-idempotent request (a
 * POST) may already have taken effect, so that a create is verified before it
 * is sent again: POST is not idempotent (docs/PLATFORM-API.md).
 *
 * The API key never reaches an error: transport errors (got's carry the
 * request options, headers included) are reduced to their code and message,
 * and every text taken from the wire goes through a scrubber first.
 */

export type PlatformErrorCode =
  | 'platform.bad-request'
  | 'platform.unauthorized'
  | 'platform.not-found'
  | 'platform.rate-limited'
  | 'platform.server'
  | 'platform.timeout'
  | 'platform.network'
  | 'platform.invalid-response'
  | 'platform.invalid-request'
  | 'platform.client'
  | 'platform.cross-origin'
  | 'platform.aborted';

/** Removes secrets (the API key) from text taken off the wire. */
export type Scrub = (text: string) => string;

/** Where an error happened: never the origin (it may carry credentials), never headers. */
export interface RequestContext {
  method: string;
  /** The route template, e.g. `/companies/{id}`. */
  route: string;
  /** The concrete path and query, e.g. `/companies/42`. Defaults to the route. */
  path?: string;
}

export interface PlatformErrorOptions extends RequestContext {
  statusCode?: number;
  retryable: boolean;
  mayHaveApplied: boolean;
  /** A short excerpt of the response body, scrubbed of secrets. */
  body?: string;
  /** DRF's `{"detail": …}`, when the body had one. */
  detail?: string;
  cause?: unknown;
}

export abstract class PlatformError extends Error {
  abstract readonly code: PlatformErrorCode;
  readonly statusCode: number | undefined;
  /** Can sending the same request again help? */
  readonly retryable: boolean;
  /** May a non-idempotent request already have taken effect? */
  readonly mayHaveApplied: boolean;
  readonly method: string;
  readonly route: string;
  readonly path: string;
  readonly body: string | undefined;
  readonly detail: string | undefined;

  constructor(message: string, opts: PlatformErrorOptions) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.statusCode = opts.statusCode;
    this.retryable = opts.retryable;
    this.mayHaveApplied = opts.mayHaveApplied;
    this.method = opts.method;
    this.route = opts.route;
    this.path = opts.path ?? opts.route;
    this.body = opts.body;
    this.detail = opts.detail;
  }

  toJSON(): Record<string, unknown> {
    // Own fields hold no secret (see the factories), so all of them are shown.
    return {
      ...(Object.fromEntries(Object.entries(this)) as Record<string, unknown>),
      message: this.message,
    };
  }
}

export class BadRequestError extends PlatformError {
  override readonly name = 'BadRequestError';
  readonly code = 'platform.bad-request';
  /** Field messages as DRF gives them; nested errors are keyed by dotted path. */
  readonly fields: Record<string, string[]>;
  constructor(message: string, opts: PlatformErrorOptions & { fields: Record<string, string[]> }) {
    const { fields, ...rest } = opts;
    super(message, rest);
    this.fields = fields;
  }
}

export class UnauthorizedError extends PlatformError {
  override readonly name = 'UnauthorizedError';
  readonly code = 'platform.unauthorized';
}

export class NotFoundError extends PlatformError {
  override readonly name = 'NotFoundError';
  readonly code = 'platform.not-found';
}

export class RateLimitedError extends PlatformError {
  override readonly name = 'RateLimitedError';
  readonly code = 'platform.rate-limited';
  /** The server's wait from `Retry-After`, or null when it gave none. */
  readonly retryAfterMs: number | null;
  constructor(message: string, opts: PlatformErrorOptions & { retryAfterMs: number | null }) {
    const { retryAfterMs, ...rest } = opts;
    super(message, rest);
    this.retryAfterMs = retryAfterMs;
  }
}

export class ServerError extends PlatformError {
  override readonly name = 'ServerError';
  readonly code = 'platform.server';
  /** A 503 may say when to come back. */
  readonly retryAfterMs: number | null;
  constructor(message: string, opts: PlatformErrorOptions & { retryAfterMs: number | null }) {
    const { retryAfterMs, ...rest } = opts;
    super(message, rest);
    this.retryAfterMs = retryAfterMs;
  }
}

/** Any other 4xx (403, 405, 409, 413, …). */
export class ClientError extends PlatformError {
  override readonly name = 'ClientError';
  readonly code = 'platform.client';
}

export class TimeoutError extends PlatformError {
  override readonly name = 'TimeoutError';
  readonly code = 'platform.timeout';
}

export class NetworkError extends PlatformError {
  override readonly name = 'NetworkError';
  readonly code = 'platform.network';
}

/** A response that is not JSON, fails its schema, loops its pages, or is an unexpected status. */
export class InvalidResponseError extends PlatformError {
  override readonly name = 'InvalidResponseError';
  readonly code = 'platform.invalid-response';
  /** Each schema problem with its path, e.g. `results.3.crm_company_id: expected number`. */
  readonly issues: string[];
  constructor(message: string, opts: PlatformErrorOptions & { issues?: string[] }) {
    const { issues, ...rest } = opts;
    super(message, rest);
    this.issues = issues ?? [];
  }
}

/** A request body refused by its schema before anything was sent. */
export class InvalidRequestError extends PlatformError {
  override readonly name = 'InvalidRequestError';
  readonly code = 'platform.invalid-request';
  readonly issues: string[];
  constructor(message: string, opts: PlatformErrorOptions & { issues: string[] }) {
    const { issues, ...rest } = opts;
    super(message, rest);
    this.issues = issues;
  }
}

/** A `next` URL on another origin: refused before sending, so the key never leaves. */
export class CrossOriginError extends PlatformError {
  override readonly name = 'CrossOriginError';
  readonly code = 'platform.cross-origin';
}

/** The caller's AbortSignal fired; `cause` is the signal's reason. */
export class AbortedError extends PlatformError {
  override readonly name = 'AbortedError';
  readonly code = 'platform.aborted';
}
