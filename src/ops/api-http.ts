/**
 * The HTTP edges of the ops API: one-line JSON errors, engine errors mapped
 * to statuses, query strings and bodies checked against their zod shapes,
 * and the guard that keeps other sites from starting work through an
 * operator's browser.
 */
import type { NextFunction, Request, Response } from 'express';
import type { z } from 'zod';
import { SourceError } from '../crm/source-error.js';
import { NoSuchRunError, RetrySourceError, RunNotEndedError } from '../engine/run-service.js';
import { SourceCredentialsError } from '../engine/run-source.js';
import { JobError } from '../jobs/definition.js';
import { scrubText } from '../log.js';
import { isLoopback } from '../loopback.js';

/** An answer the route gives on purpose: a status and a one-line reason. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** One line, without registered secrets, URL credentials or auth-header values (`scrubText`). */
export function oneLine(text: string): string {
  return scrubText(text).replace(/\s*\n\s*/g, '; ');
}

export function sendError(res: Response, status: number, message: string): void {
  res.status(status).json({ error: oneLine(message) });
}

/** The status of an error the engine throws; anything unknown is the server's fault. */
export function statusOf(err: unknown): number {
  if (err instanceof ApiError) return err.status;
  if (err instanceof NoSuchRunError) return 404;
  if (err instanceof JobError) return err.code === 'job.not-found' ? 404 : 422;
  if (err instanceof RunNotEndedError) return 409;
  if (err instanceof RetrySourceError || err instanceof SourceCredentialsError) return 422;
  if (err instanceof SourceError) return 422;
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && code.startsWith('platform.')) return 502;
  return 500;
}

/** Checks a query string or body; the first problem names its field. */
export function parseInput<T extends z.ZodType>(
  schema: T,
  input: unknown,
  what: string,
): z.output<T> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const keys =
    issue.code === 'unrecognized_keys'
      ? issue.keys.join(', ')
      : issue.path.map(String).join('.') || what;
  const reason = issue.code === 'unrecognized_keys' ? 'unknown field' : issue.message;
  throw new ApiError(400, `${what}: ${keys}: ${reason}`);
}

/** A query string as one value per name (a name given twice is refused). */
export function queryOf(req: Request): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.query)) {
    if (typeof value !== 'string') throw new ApiError(400, `query: ${name}: give it once`);
    out[name] = value;
  }
  return out;
}

/**
 * Refuses a request that starts work when the browser says it comes from
 * another site: `Sec-Fetch-Site: cross-site`, or an `Origin` whose host is
 * not this server's (scheme aside, for a proxy that ends TLS in front).
 * Scripts (curl) send neither header and pass with their token.
 */
export function sameOriginOnly(req: Request, res: Response, next: NextFunction): void {
  if (req.get('sec-fetch-site') === 'cross-site') {
    sendError(res, 403, 'a page on another site may not start work here (Sec-Fetch-Site)');
    return;
  }
  const origin = req.get('origin');
  if (origin !== undefined) {
    let host: string | undefined;
    try {
      host = new URL(origin).host;
    } catch {
      host = undefined;
    }
    if (host === undefined || host !== req.get('host')) {
      sendError(res, 403, 'a page on another site may not start work here (Origin)');
      return;
    }
  }
  next();
}

/**
 * Without a token the server listens on loopback only, so every honest
 * request names a loopback host. One that names another host reached it
 * through a name that an attacker's DNS pointed at 127.0.0.1 (DNS
 * rebinding): its page would be "same origin" with itself, and is refused.
 */
export function loopbackHostOnly(req: Request, res: Response, next: NextFunction): void {
  const host = (req.get('host') ?? '').replace(/:\d+$/, '').replace(/^\[(.*)\]$/, '$1');
  if (isLoopback(host)) {
    next();
    return;
  }
  sendError(res, 403, 'without OPS_TOKEN the API answers only requests to a loopback host');
}
