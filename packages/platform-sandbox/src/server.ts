/**
 * The sandbox's HTTP server, on plain node:http. One request goes through:
 * internal routes (`/__sandbox/*`, no key, not counted) → rate limit per key (429) →
 * fault (503, before any effect) → latency → route (404) → key (401) →
 * method (405) → body (415/400) → handler → drop-after-commit for writes.
 * Faults come before routing and auth, as a gateway in front of the service
 * would apply them, so unauthenticated requests count against the limit.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { silentLogger, type Logger } from './log.js';
import { ApiError } from './errors.js';
import { Faults, seededRandom } from './faults.js';
import { parseFaults, parseOptions, type SandboxFaults, type SandboxOptions } from './options.js';
import { Router, type Answer, type Match } from './router.js';
import { buildRoutes } from './routes.js';
import { Stats } from './stats.js';
import { Store } from './store.js';

export interface Sandbox {
  /** Base URL, e.g. http://127.0.0.1:4010 */
  url: string;
  port: number;
  close(): Promise<void>;
  /** Changes fault knobs while running; a key given as `undefined` turns that knob off. */
  setFaults(partial: SandboxFaults): void;
}

const WRITES = new Set(['POST', 'PUT', 'PATCH']);
const MAX_BODY = 10 * 1024 * 1024;
/** Marks a body over MAX_BODY: read and dropped, so the connection stays usable. */
const TOO_LARGE = Buffer.alloc(0);
const DEFAULT_PAGE_SIZE = 100;
const MAX_PAGE_SIZE = 1000;

type Reply = { status: number; body: unknown; headers?: Record<string, string> };

function send(res: ServerResponse, reply: Reply, allow?: string): void {
  const json = JSON.stringify(reply.body);
  const headers: Record<string, string | number> = {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(json),
    Vary: 'Accept',
    ...reply.headers,
  };
  if (allow !== undefined) headers.Allow = allow;
  res.writeHead(reply.status, headers);
  res.end(json);
}

function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  // GETs without a body end at once; skip the stream machinery for them.
  if (
    req.headers['content-length'] === undefined &&
    req.headers['transfer-encoding'] === undefined
  ) {
    return Promise.resolve(undefined);
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_BODY) chunks.push(c);
    });
    req.on('end', () => resolve(size > MAX_BODY ? TOO_LARGE : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** DRF's JSONParser: only JSON media types; a body without a type is read as JSON too. */
function parseBody(req: IncomingMessage, raw: Buffer | undefined): unknown {
  if (raw === TOO_LARGE) throw new ApiError(413, { detail: 'Request body too large.' });
  if (!raw || raw.length === 0) return {};
  const type = req.headers['content-type'];
  if (type !== undefined) {
    const media = (type.split(';')[0] ?? '').trim().toLowerCase();
    if (media !== 'application/json' && !media.endsWith('+json')) {
      throw new ApiError(415, { detail: `Unsupported media type "${type}" in request.` });
    }
  }
  try {
    return JSON.parse(raw.toString('utf8')) as unknown;
  } catch (err) {
    throw new ApiError(400, { detail: `JSON parse error - ${(err as Error).message}` });
  }
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function startSandbox(options: SandboxOptions): Promise<Sandbox> {
  const opts = parseOptions(options);
  const logger: Logger = options.logger ?? silentLogger;
  const store = new Store(opts.apiKey);
  const stats = new Stats();
  const faults = new Faults(opts, seededRandom(opts.seed ?? Math.floor(Math.random() * 2 ** 32)));
  const pageSize = opts.pageSize ?? DEFAULT_PAGE_SIZE;
  const router = new Router(
    buildRoutes(store, {
      pageSize,
      maxPageSize: Math.max(pageSize, MAX_PAGE_SIZE),
      extensions: opts.extensions ?? [],
    }),
  );
  const host = opts.host ?? '127.0.0.1';

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const target = req.url ?? '/';
    const q = target.indexOf('?');
    const path = q === -1 ? target : target.slice(0, q);
    const method = req.method ?? 'GET';
    const arrived = Date.now();

    if (path.startsWith('/__sandbox/')) {
      await readBody(req);
      if (method === 'GET' && path === '/__sandbox/stats')
        return send(res, { status: 200, body: stats.snapshot() });
      if (method === 'GET' && path === '/__sandbox/requests')
        return send(res, { status: 200, body: stats.requests() });
      if (method === 'GET' && path === '/__sandbox/dump')
        return send(res, { status: 200, body: store.dump() });
      return send(res, { status: 404, body: { detail: 'Not found.' } });
    }

    const match: Match | undefined = router.match(path);
    const template = match?.route.template ?? path;
    let reply: Reply;
    // DRF keys a throttle by user; the key sent stands for it, an absent one for anonymous.
    const wait = faults.throttle(req.headers.authorization ?? '');
    const unavailable = wait === undefined && faults.serviceUnavailable();
    const raw = await readBody(req);
    if (faults.latencyMs > 0) await sleep(faults.latencyMs);

    if (wait !== undefined) {
      reply = {
        status: 429,
        body: {
          detail: `Request was throttled. Expected available in ${wait} second${wait === 1 ? '' : 's'}.`,
        },
        headers: { 'Retry-After': String(wait) },
      };
    } else if (unavailable) {
      reply = {
        status: 503,
        body: { detail: 'Service temporarily unavailable, try again later.' },
      };
    } else {
      try {
        const answer = dispatch(req, match, path, target, q, method, raw);
        if (WRITES.has(method) && answer.status < 300 && faults.dropAfterCommit()) {
          // The write is committed; the client never learns it.
          stats.record(method, template, 0, arrived);
          req.socket.destroy();
          return;
        }
        reply = answer;
      } catch (err) {
        if (err instanceof ApiError) {
          reply = { status: err.status, body: err.body, headers: err.headers };
        } else {
          logger.error({ err, method, route: template }, 'sandbox handler failed');
          reply = { status: 500, body: { detail: 'A server error occurred.' } };
        }
      }
    }
    stats.record(method, template, reply.status, arrived, wait);
    send(res, reply, match?.route.allow);
  }

  function dispatch(
    req: IncomingMessage,
    match: Match | undefined,
    path: string,
    target: string,
    q: number,
    method: string,
    raw: Buffer | undefined,
  ): Answer {
    if (!match) throw new ApiError(404, { detail: 'Not found.' });
    const auth = store.authenticate(req.headers.authorization);
    if (!auth.ok) {
      throw new ApiError(401, { detail: auth.detail }, { 'WWW-Authenticate': 'ApiKey' });
    }
    const handler = match.route.handlers[method === 'HEAD' ? 'GET' : method];
    if (!handler) throw new ApiError(405, { detail: `Method "${method}" not allowed.` });
    return handler({
      method,
      id: match.id === undefined ? undefined : decodeURIComponent(match.id),
      query: new URLSearchParams(q === -1 ? '' : target.slice(q + 1)),
      body: WRITES.has(method) ? parseBody(req, raw) : {},
      principal: auth.principal,
      origin: `http://${req.headers.host ?? `${host}:${port}`}`,
      path,
    });
  }

  const sockets = new Set<Socket>();
  const server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
    handle(req, res).catch((err: unknown) => {
      // A client that went away mid-request is not the sandbox's fault.
      if (req.destroyed || res.destroyed) return;
      logger.error({ err }, 'sandbox request failed');
      if (!res.headersSent)
        send(res, { status: 500, body: { detail: 'A server error occurred.' } });
      else res.destroy();
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('clientError', (_err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
    else socket.destroy();
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  logger.debug({ url }, 'sandbox listening');

  let closing: Promise<void> | undefined;
  return {
    url,
    port,
    setFaults(partial) {
      faults.set(parseFaults(partial));
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Keep-alive sockets would hold close() open until they time out.
        for (const s of sockets) s.destroy();
      });
      return closing;
    },
  };
}
