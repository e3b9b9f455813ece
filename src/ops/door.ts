/**
 * The one door of the ops server: every route (console, /api, /metrics,
 * /queues, probes) passes these checks before anything else runs.
 *
 * - Without a token the server listens on loopback only, so every honest
 *   request names a loopback `Host`. One that names another host reached it
 *   through a name an attacker's DNS pointed at 127.0.0.1 (DNS rebinding): its
 *   page would be "same origin" with itself, and is refused.
 * - With a token, every route but the probes and the console's static files
 *   needs `Authorization: Bearer <token>` (the scheme in any case).
 * - A request that changes anything (any method but GET, HEAD and OPTIONS) is
 *   refused when the browser says it comes from another site.
 *
 * Answers of the server carry no cache and no sniffing by default; the
 * console's files set their own headers.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { isLoopback } from '../loopback.js';

/** One-line JSON refusal (the same shape as every API error). */
export function refuse(res: Response, status: number, message: string): void {
  res.status(status).json({ error: message });
}

// Hash first so the comparison is constant-time whatever the lengths.
function sameToken(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/** The token of an `Authorization: Bearer <token>` header (RFC 6750: the scheme is case-insensitive). */
export function bearerToken(header: string | undefined): string | undefined {
  const m = /^bearer +(\S+) *$/i.exec(header ?? '');
  return m?.[1];
}

/** The host name of a `Host` header, without port or IPv6 brackets. */
export function hostName(host: string | undefined): string {
  return (host ?? '').replace(/:\d+$/, '').replace(/^\[(.*)\]$/, '$1');
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Routes that answer without a token: probes (orchestrators carry no credentials) and the console's static files (no data, no secret). */
function isOpenPath(path: string): boolean {
  return path === '/healthz' || path === '/readyz' || path === '/' || path.startsWith('/console/');
}

/**
 * Refuses a request that changes something when the browser says it comes
 * from another site: `Sec-Fetch-Site: cross-site`, or an `Origin` whose host
 * is not this server's (scheme aside, for a proxy that ends TLS in front).
 * Scripts (curl) send neither header and pass with their token.
 */
function fromThisSite(req: Request): string | undefined {
  if (req.get('sec-fetch-site') === 'cross-site')
    return 'a page on another site may not change anything here (Sec-Fetch-Site)';
  const origin = req.get('origin');
  if (origin === undefined) return undefined;
  let host: string | undefined;
  try {
    host = new URL(origin).host;
  } catch {
    host = undefined;
  }
  if (host === undefined || host !== req.get('host'))
    return 'a page on another site may not change anything here (Origin)';
  return undefined;
}

export interface DoorOptions {
  /** OPS_TOKEN; without it only loopback Host names are served. */
  token?: string;
}

/** The middleware that holds every route of the ops server to the rules above. */
export function door(opts: DoorOptions) {
  const token = opts.token;
  return (req: Request, res: Response, next: NextFunction): void => {
    res.set({ 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' });
    if (token === undefined) {
      if (!isLoopback(hostName(req.get('host')))) {
        refuse(res, 403, 'without OPS_TOKEN this server answers only requests to a loopback host');
        return;
      }
    } else if (!isOpenPath(req.path)) {
      const given = bearerToken(req.get('authorization'));
      if (given === undefined || !sameToken(given, token)) {
        res.set('WWW-Authenticate', 'Bearer');
        refuse(res, 401, 'a valid bearer token is required');
        return;
      }
    }
    if (!SAFE_METHODS.has(req.method)) {
      const why = fromThisSite(req);
      if (why !== undefined) {
        refuse(res, 403, why);
        return;
      }
    }
    next();
  };
}

/**
 * The queue dashboard is for looking only: anything but GET and HEAD is
 * refused before it reaches the board (its read-only mode hides the buttons;
 * this keeps every route of it, whatever a later version adds, from
 * changing a queue). What an operator may change goes through /api.
 */
export function readOnly(req: Request, res: Response, next: NextFunction): void {
  if (req.method === 'GET' || req.method === 'HEAD') {
    next();
    return;
  }
  res.set('Allow', 'GET, HEAD');
  refuse(res, 405, 'the queue dashboard is read-only; start and retry runs through /api');
}
