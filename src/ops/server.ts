/**
 * The ops HTTP server: liveness, readiness, Prometheus metrics, the web
 * console, its JSON API and the BullMQ dashboard (read-only). Bound to
 * loopback unless configured; bound anywhere else it refuses to start
 * without a token. Every route goes through one door (door.ts): the Host
 * check without a token, the token with one, and the same-site check for
 * anything that changes state. No answer carries a stack trace or a path.
 */
import { STATUS_CODES, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { Queue } from 'bullmq';
import express, { type NextFunction, type Request, type Response } from 'express';
import { redisServes, type RedisClient } from '../redis/connection.js';
import { DEFAULT_OPS_HOST } from '../defaults.js';
import { redactSecrets, registerSecret, silentLogger, type Logger } from '../log.js';
import { isLoopback } from '../loopback.js';
import { opsApi, type OpsApiDeps } from './api.js';
import { consoleRouter } from './console-route.js';
import { door, readOnly, refuse } from './door.js';
import { processMetrics, type Metrics } from './metrics.js';

export interface OpsServerOptions {
  host?: string;
  port: number;
  token?: string;
  redis: RedisClient;
  queues: readonly Queue[];
  /** Resolves when the platform accepts our key; its result is cached for `readyCacheMs`. */
  checkPlatform: () => Promise<void>;
  logger?: Logger;
  metrics?: Metrics;
  readyCacheMs?: number;
  /** What the JSON API under /api reads and starts runs with; without it there is no /api. */
  api?: OpsApiDeps;
}

export interface OpsServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

export class OpsServerError extends Error {
  readonly code = 'ops.token-required';
  constructor(host: string) {
    super(
      `the ops server would listen on ${host}, which is not loopback: set OPS_TOKEN so that only holders of the token can read it`,
    );
    this.name = 'OpsServerError';
  }
}

/** How long a probe waits for Redis' PING, and for the platform check, before it says which did not answer. */
const PING_TIMEOUT_MS = 2_000;
const PLATFORM_WAIT_MS = 3_000;

/** `p`, or `late` when `p` has not settled within `ms` (a probe answers whatever hangs). */
function within<T>(p: Promise<T>, ms: number, late: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<T>((resolve) => {
      timer = setTimeout(() => resolve(late), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

function messageOf(err: unknown): string {
  return redactSecrets(err instanceof Error ? err.message : String(err));
}

// The dashboard's page: its own scripts and styles (it sets inline styles), nothing from elsewhere.
const BOARD_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'self'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

function boardCsp(_req: Request, res: Response, next: NextFunction): void {
  res.set({ 'Content-Security-Policy': BOARD_CSP, 'Referrer-Policy': 'no-referrer' });
  next();
}

export async function startOpsServer(opts: OpsServerOptions): Promise<OpsServer> {
  const host = opts.host ?? DEFAULT_OPS_HOST;
  const logger = opts.logger ?? silentLogger;
  const metrics = opts.metrics ?? processMetrics();
  const readyCacheMs = opts.readyCacheMs ?? 30_000;
  if (!isLoopback(host) && !opts.token) throw new OpsServerError(host);
  if (opts.token) registerSecret(opts.token);
  metrics.watchQueues(opts.queues);

  const app = express();
  app.disable('x-powered-by');
  app.use(door(opts.token !== undefined ? { token: opts.token } : {}));

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  // The console's page and files hold no data and no secret: the door lets them through without a token.
  app.use(consoleRouter());

  // The platform check costs an API call: one per cache period, shared by
  // concurrent probes. Failures are kept for a shorter time so recovery shows soon.
  let platformCheck: { at: number; ttl: number; result: Promise<string | undefined> } | undefined;
  const platformProblem = (): Promise<string | undefined> => {
    const now = Date.now();
    if (platformCheck && now - platformCheck.at < platformCheck.ttl) return platformCheck.result;
    const entry = {
      at: now,
      ttl: readyCacheMs,
      result: opts.checkPlatform().then(
        () => undefined,
        (err: unknown) => {
          entry.ttl = Math.min(readyCacheMs, 5_000);
          return `platform: ${messageOf(err)}`;
        },
      ),
    };
    platformCheck = entry;
    return entry.result;
  };

  app.get('/readyz', async (_req, res) => {
    // The platform check waits on the pacer, which waits on Redis: neither may hold the probe.
    const [redisProblem, platform] = await Promise.all([
      within(
        redisServes(opts.redis).then(
          () => undefined,
          (err: unknown) => `redis: ${messageOf(err)}`,
        ),
        PING_TIMEOUT_MS,
        `redis: no answer within ${PING_TIMEOUT_MS} ms`,
      ),
      within(
        platformProblem(),
        PLATFORM_WAIT_MS,
        `platform: no answer within ${PLATFORM_WAIT_MS} ms`,
      ),
    ]);
    const problems = [redisProblem, platform].filter((p): p is string => p !== undefined);
    if (problems.length > 0) {
      res.status(503).json({ status: 'unready', problems });
      return;
    }
    res.json({ status: 'ready' });
  });

  app.get('/metrics', async (_req, res) => {
    try {
      const body = await metrics.registry.metrics();
      res.set('Content-Type', metrics.registry.contentType).send(body);
    } catch (err) {
      logger.warn({ err }, 'metrics collection failed');
      res
        .status(500)
        .type('text/plain')
        .send(`metrics collection failed: ${messageOf(err)}\n`);
    }
  });

  if (opts.api) app.use('/api', opsApi(opts.api));

  const board = new ExpressAdapter();
  board.setBasePath('/queues');
  createBullBoard({
    queues: opts.queues.map((q) => new BullMQAdapter(q, { readOnlyMode: true })),
    serverAdapter: board,
  });
  const boardApp = board.getRouter() as express.Express;
  boardApp.disable('x-powered-by');
  app.use('/queues', readOnly, boardCsp, boardApp);

  app.use((req, res) => {
    refuse(res, 404, `no route ${req.method} ${req.path}`);
  });
  // Whatever a route or a static file throws: a status and its name, never a stack or a path.
  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    const given = (err as { status?: unknown; statusCode?: unknown } | null) ?? {};
    const raw = Number(given.status ?? given.statusCode);
    const status = Number.isInteger(raw) && raw >= 400 && raw < 600 ? raw : 500;
    if (status >= 500) logger.error({ err, path: req.path }, 'ops request failed');
    if (res.headersSent) {
      res.destroy();
      return;
    }
    refuse(res, status, (STATUS_CODES[status] ?? 'error').toLowerCase());
  });

  const server: Server = await new Promise((resolve, reject) => {
    const s = app.listen(opts.port, host, (err?: Error) => (err ? reject(err) : resolve(s)));
    s.once('error', reject);
  });
  const { port } = server.address() as AddressInfo;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  const url = `http://${shownHost}:${port}`;
  logger.info({ url, auth: opts.token ? 'bearer' : 'none' }, 'ops server listening');

  return {
    url,
    port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}
