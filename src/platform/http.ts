/**
 * The HTTP transport under PlatformClient: one got instance with its own
 * retry off (retries are one layer, src/platform/with-retry.ts), no redirects
 * followed (a redirect could carry the key elsewhere), timeouts set, and a
 * keep-alive agent. It sends one request, reads the body as text, and turns
 * every failure into a PlatformError with the key scrubbed out.
 */
import { createRequire } from 'node:module';
import {
  Agent as HttpAgent,
  request as httpRequest,
  type ClientRequest,
  type IncomingMessage,
  type RequestOptions,
} from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { performance } from 'node:perf_hooks';
import got, { Options, type CancelableRequest, type Method, type Response } from 'got';
import { DEFAULT_IDLE_SOCKET_MS, DEFAULT_PLATFORM_TIMEOUT_MS } from '../defaults.js';
import { redactSecrets, registerSecret, silentLogger, type Logger } from '../log.js';
import type { Pacer, RequestTiming, Ticket } from '../queue/pacer.js';
import { errorFromResponse, errorFromTransport } from './error-factory.js';
import { InvalidResponseError, type Scrub } from './errors.js';

export interface HttpOptions {
  baseUrl: string;
  apiKey: string;
  /** Whole-request timeout. Default 30,000 ms. */
  timeoutMs?: number;
  /** Connection timeout. Default min(timeoutMs, 10,000) ms. */
  connectTimeoutMs?: number;
  logger?: Logger;
  /** Agents to share; when given, `close()` leaves them open. */
  agent?: { http?: HttpAgent; https?: HttpsAgent };
  /** Sockets per origin for the agents we create. Default 16. */
  maxSockets?: number;
  /** An idle keep-alive socket of the agents we create is closed after this long. Default DEFAULT_IDLE_SOCKET_MS. */
  idleSocketMs?: number;
  /**
   * Paces every request (src/queue/pacer.ts): `acquire` before sending,
   * `observe` with each answer. Without one, requests go at once.
   */
  pacer?: Pacer;
}

export interface HttpRequest {
  method: Method;
  /** Route template for logs and errors, e.g. `/companies/{id}`. */
  route: string;
  /** Absolute URL, already checked to be on the base origin. */
  url: URL;
  body?: unknown;
  signal?: AbortSignal | undefined;
}

export interface HttpResult {
  status: number;
  /** The parsed JSON body (`undefined` for an empty 2xx body). */
  body: unknown;
}

const VERSION = readVersion();

export class PlatformHttp {
  readonly base: URL;
  private readonly basePath: string;
  readonly origin: string;
  /** Every request's options but its own (method, body, signal): merged once, here. */
  private readonly defaults: Options;
  private readonly logger: Logger;
  private readonly ownAgents: Array<HttpAgent | HttpsAgent> = [];
  private readonly pacer: Pacer | undefined;
  readonly scrub: Scrub;

  constructor(opts: HttpOptions) {
    const base = new URL(opts.baseUrl);
    if (base.username || base.password) {
      throw new TypeError(
        'PlatformClient: baseUrl must not carry credentials; pass the API key as apiKey',
      );
    }
    if (base.protocol !== 'http:' && base.protocol !== 'https:') {
      throw new TypeError(`PlatformClient: baseUrl must be http(s), got ${base.protocol}`);
    }
    if (!opts.apiKey) throw new TypeError('PlatformClient: apiKey is required');
    // The base path is a prefix for every route: kept without a trailing slash.
    this.basePath = base.pathname.replace(/\/+$/, '');
    base.search = '';
    base.hash = '';
    this.base = base;
    this.origin = base.origin;
    this.logger = opts.logger ?? silentLogger;
    this.pacer = opts.pacer;

    const key = opts.apiKey;
    registerSecret(key);
    this.scrub = (text) => redactSecrets(text.split(key).join('[REDACTED]'));

    const timeoutMs = opts.timeoutMs ?? DEFAULT_PLATFORM_TIMEOUT_MS;
    const maxSockets = opts.maxSockets ?? 16;
    const agent = opts.agent ?? {};
    // Every socket the agent may open is kept when it falls idle (node's
    // default keeps 256): with more writes in flight than that (the worker
    // allows one per write slot), each answer past the 256th closed its socket
    // and a later request opened a new one: a third of the requests of a run
    // at 5,000/s closed their socket, and nearly half opened one. An idle one
    // is closed by us after `idleSocketMs` (DEFAULT_IDLE_SOCKET_MS says why),
    // not left to whatever ends it on the way to the server.
    const pool = {
      keepAlive: true,
      maxSockets,
      maxFreeSockets: maxSockets,
      timeout: opts.idleSocketMs ?? DEFAULT_IDLE_SOCKET_MS,
    };
    const http = agent.http ?? this.own(new HttpAgent(pool));
    const https = agent.https ?? this.own(new HttpsAgent(pool));
    const defaults = new Options(undefined, {
      retry: { limit: 0 },
      throwHttpErrors: false,
      followRedirect: false,
      responseType: 'text',
      timeout: {
        connect: opts.connectTimeoutMs ?? Math.min(timeoutMs, 10_000),
        request: timeoutMs,
      },
      agent: { http, https },
      request: sendNative,
      headers: {
        authorization: key,
        accept: 'application/json',
        'content-type': 'application/json',
        'user-agent': `crm-sync/${VERSION}`,
      },
    });
    // No HTTP cache is used, so its options are emptied: got spreads them into
    // the object it hands to node:http on every request, and V8 builds that
    // 30-field object the slow way after such a spread (about 35 µs a
    // request on the bench machine, a tenth of the client's CPU per write).
    defaults.cacheOptions = {};
    defaults.freeze();
    this.defaults = defaults;
  }

  /** Resolves a route path (e.g. `/companies/42`) under the base URL. */
  url(path: string): URL {
    const url = new URL(this.base.href);
    url.pathname = `${this.basePath}${path}`;
    return url;
  }

  async send(req: HttpRequest): Promise<HttpResult> {
    let status: number;
    let text: string;
    let headers: Record<string, string | string[] | undefined>;
    let started = performance.now();
    let ticket: Ticket | undefined;
    /** When the request was written out and how long its answer took to begin: the pacer's measure of its lateness. */
    let timing: RequestTiming | undefined;
    try {
      if (this.pacer) {
        ticket = await this.pacer.acquire(req.signal, req.method === 'GET');
        started = performance.now();
      }
      const res = await request(
        req.url,
        {
          method: req.method,
          ...(req.body !== undefined && { body: JSON.stringify(req.body) }),
          ...(req.signal && { signal: req.signal }),
        },
        this.defaults,
      );
      status = res.statusCode;
      text = res.body;
      headers = res.headers;
      const t = res.timings;
      if (t?.upload !== undefined && t.response !== undefined)
        timing = { sentAt: t.upload, waitedMs: t.response - t.upload };
    } catch (error) {
      const err = errorFromTransport({
        ...this.context(req),
        error,
        ...(req.signal && { signal: req.signal }),
      });
      this.log(req, undefined, started, err.code);
      throw err;
    }
    this.log(req, status, started);
    if (ticket) this.pacer?.observe(status, headers, ticket, timing);
    if (status < 200 || status > 299)
      throw errorFromResponse({ ...this.context(req), status, headers, body: text });
    if (text.trim() === '') return { status, body: undefined };
    try {
      return { status, body: JSON.parse(text) as unknown };
    } catch {
      const ctx = this.context(req);
      const type = headers['content-type'] ?? 'no content type';
      throw new InvalidResponseError(
        `${req.method} ${ctx.path} → ${status}: body is not JSON (${type})`,
        {
          ...ctx,
          statusCode: status,
          retryable: false,
          // Answered with success: a write went through, whatever the body says.
          mayHaveApplied: req.method !== 'GET' && req.method !== 'OPTIONS',
          body: this.scrub(text.replace(/\s+/g, ' ').slice(0, 300)),
          issues: ['(root): expected JSON'],
        },
      );
    }
  }

  /** Closes the agents this transport created (keep-alive sockets hold the event loop). */
  close(): void {
    for (const a of this.ownAgents) a.destroy();
  }

  private own<A extends HttpAgent | HttpsAgent>(agent: A): A {
    this.ownAgents.push(agent);
    return agent;
  }

  /** What an error names of the request (built only for one: most requests succeed). */
  private context(req: HttpRequest) {
    const path = req.url.pathname + req.url.search;
    return { method: req.method, route: req.route, path, scrub: this.scrub };
  }

  private log(req: HttpRequest, status: number | undefined, started: number, code?: string): void {
    // Debug lines are off in production: their fields are not even gathered then.
    if (!this.logger.isLevelEnabled('debug')) return;
    // Method, route template, status, duration: never headers, never the key.
    this.logger.debug(
      {
        method: req.method,
        route: req.route,
        status: status ?? null,
        durationMs: Math.round((performance.now() - started) * 10) / 10,
        ...(code && { code }),
      },
      'platform request',
    );
  }
}

/**
 * node:http's request with the options got passes, less those it leaves
 * undefined (got names some forty, most of them TLS settings an http:
 * request does not use): node:http copies them into the request and the
 * agent's options, and the long objects cost more than the request itself.
 * An option left undefined and one not given mean the same to node:http.
 */
function sendNative(
  url: URL,
  options: RequestOptions,
  callback?: (res: IncomingMessage) => void,
): ClientRequest {
  const given: Record<string, unknown> = {};
  for (const key in options) {
    const value = (options as Record<string, unknown>)[key];
    if (value !== undefined) given[key] = value;
  }
  return (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, given, callback);
}

/**
 * got with prepared defaults: got(url, options, defaults) merges only
 * `options` into a copy of `defaults`, as an instance made by `got.extend`
 * does with its own (its typings name the third argument only for a call
 * without url and options).
 */
const request = got as unknown as (
  url: URL,
  options: { method: Method; body?: string; signal?: AbortSignal },
  defaults: Options,
) => CancelableRequest<Response<string>>;

function readVersion(): string {
  try {
    // Same relative path from src/platform/ and dist/platform/.
    const pkg = createRequire(import.meta.url)('../../package.json') as { version?: unknown };
    return typeof pkg.version === 'string' ? pkg.version : '0.0.0';
  } catch {
    return '0.0.0';
  }
}
