/**
 * PlatformClient against a scripted node:http server on port 0 (in the manner
 * of stripe-node's test utils): each test says what the server answers, and
 * the server records every request it received.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import {
  createServer,
  type IncomingMessage,
  type Server as HttpServer,
  type ServerResponse,
} from 'node:http';
import { Agent as HttpsAgent, createServer as createHttpsServer } from 'node:https';
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { inspect } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { RETRY_DEFAULTS } from '../../src/config.js';
import { DEFAULT_IDLE_SOCKET_MS } from '../../src/defaults.js';
import { createLogger } from '../../src/log.js';
import { PlatformClient, type PlatformClientOptions } from '../../src/platform/client.js';
import {
  AbortedError,
  BadRequestError,
  CrossOriginError,
  InvalidRequestError,
  InvalidResponseError,
  NetworkError,
  PlatformError,
  RateLimitedError,
  ServerError,
  TimeoutError,
  UnauthorizedError,
} from '../../src/platform/errors.js';
import { withRetry } from '../../src/platform/with-retry.js';
import { sleep } from '../../src/sleep.js';
import { freePort } from '../harness/redis-server.js';

const KEY = 'pk_live_9f8e7d6c5b4a39281706';

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}
type Handler = (req: IncomingMessage, res: ServerResponse, body: string, n: number) => void;

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** Starts a server on a free loopback port, closed after the test; its port. */
async function listening(server: HttpServer): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return (server.address() as AddressInfo).port;
}

/** A server whose handler runs once the request body has been read in full. */
async function scripted(handler: Handler): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      handler(req, res, body, seen.length);
    });
  });
  return { url: `http://127.0.0.1:${await listening(server)}`, seen };
}

/**
 * A keep-alive HTTP/1.1 server behind a middlebox (a NAT or load balancer)
 * that forgets a connection idle for `forgetMs` without telling the client:
 * the next bytes on it are answered by a reset. Every request gets 201
 * `{"id":N}` after `answerMs`, `Connection: keep-alive`, and no
 * `Keep-Alive: timeout` hint.
 */
async function forgetfulServer(
  forgetMs: number,
  answerMs = 0,
): Promise<{ url: string; stats: { connections: number; requests: number; resets: number } }> {
  const stats = { connections: 0, requests: 0, resets: 0 };
  const sockets = new Set<Socket>();
  const server = createTcpServer((socket) => {
    stats.connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    let idleSince = Date.now();
    let buffer = '';
    socket.on('data', (chunk: Buffer) => {
      if (Date.now() - idleSince > forgetMs) {
        stats.resets++;
        socket.resetAndDestroy();
        return;
      }
      buffer += chunk.toString('latin1');
      for (;;) {
        const end = buffer.indexOf('\r\n\r\n');
        if (end < 0) return;
        const length = Number(/content-length: *(\d+)/i.exec(buffer.slice(0, end))?.[1] ?? 0);
        if (buffer.length < end + 4 + length) return;
        buffer = buffer.slice(end + 4 + length);
        const body = JSON.stringify({ id: ++stats.requests });
        setTimeout(() => {
          socket.write(
            `HTTP/1.1 201 Created\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: keep-alive\r\n\r\n${body}`,
          );
          idleSince = Date.now();
        }, answerMs);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, stats };
}

function json(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

function client(url: string, extra: Partial<PlatformClientOptions> = {}): PlatformClient {
  const c = new PlatformClient({ baseUrl: url, apiKey: KEY, timeoutMs: 2_000, ...extra });
  cleanups.push(() => c.close());
  return c;
}

async function failure(p: Promise<unknown>): Promise<PlatformError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(PlatformError);
    return err as PlatformError;
  }
  throw new Error('expected a failure');
}

function expectNoKey(err: unknown): void {
  expect(String(err)).not.toContain(KEY);
  expect(inspect(err, { depth: 10, showHidden: true })).not.toContain(KEY);
  expect(JSON.stringify(err)).not.toContain(KEY);
  expect((err as Error).stack ?? '').not.toContain(KEY);
}

describe('PlatformClient over HTTP', () => {
  it('sends the key alone in Authorization, with JSON and User-Agent headers', async () => {
    const s = await scripted((_q, res) => json(res, 200, { id: 1, name: 'Acme' }));
    const company = await client(s.url).getCompany(1);
    expect(company).toEqual({ id: 1, name: 'Acme' });
    const h = s.seen[0]!.headers;
    expect(h.authorization).toBe(KEY);
    expect(h.accept).toBe('application/json');
    expect(h['content-type']).toBe('application/json');
    expect(h['user-agent']).toMatch(/^crm-sync\/\d+\.\d+\.\d+/);
    expect(s.seen[0]!.url).toBe('/companies/1');
  });

  it('puts routes under the base path and encodes ids', async () => {
    const s = await scripted((_q, res) => json(res, 200, {}));
    const c = client(`${s.url}/api/v1/`);
    await c.root();
    await c.gettingStartedTemplate('a/b c');
    await c.rootOptions();
    expect(s.seen.map((r) => `${r.method} ${r.url}`)).toEqual([
      'GET /api/v1/',
      'GET /api/v1/getting-started-templates/a%2Fb%20c',
      'OPTIONS /api/v1/',
    ]);
  });

  it('does not retry on its own: one request per call, whatever the failure', async () => {
    const s = await scripted((req, res) => {
      if (req.url === '/companies') return json(res, 503, { detail: 'down' });
      if (req.url === '/members')
        return json(res, 429, { detail: 'slow down' }, { 'retry-after': '3' });
      req.socket.destroy();
    });
    const c = client(s.url);
    expect(await failure(c.listCompanies())).toBeInstanceOf(ServerError);
    const limited = await failure(c.members().next());
    expect(limited).toBeInstanceOf(RateLimitedError);
    expect((limited as RateLimitedError).retryAfterMs).toBe(3000);
    expect(await failure(c.getAccount())).toBeInstanceOf(NetworkError);
    expect(s.seen.map((r) => r.url)).toEqual(['/companies', '/members', '/account']);
  });

  it('fails twice, then succeeds under withRetry', async () => {
    const s = await scripted((_q, res, _b, n) =>
      n < 3 ? json(res, 502, {}) : json(res, 200, { id: 5 }),
    );
    const c = client(s.url);
    const out = await withRetry(() => c.getCompany(5), {
      operation: 'list',
      settings: { ...RETRY_DEFAULTS, requestMinDelayMs: 1, requestMaxDelayMs: 5 },
    });
    expect(out.id).toBe(5);
    expect(s.seen).toHaveLength(3);
  });

  it('a POST that times out after sending may have been applied', async () => {
    const s = await scripted(() => {
      /* read the body, never answer */
    });
    const err = await failure(client(s.url, { timeoutMs: 250 }).createCompany({ name: 'Slow' }));
    expect(err).toBeInstanceOf(TimeoutError);
    expect(err.code).toBe('platform.timeout');
    expect(err.mayHaveApplied).toBe(true);
    expect(err.retryable).toBe(true);
    expect(s.seen[0]!.body).toBe('{"name":"Slow"}');
    expectNoKey(err);
  });

  it('a socket cut after the body was read is a NetworkError that may have been applied', async () => {
    const s = await scripted((req) => req.socket.destroy());
    const err = await failure(client(s.url).createCompany({ name: 'Cut' }));
    expect(err).toBeInstanceOf(NetworkError);
    expect(err.code).toBe('platform.network');
    expect(err.mayHaveApplied).toBe(true);
    expect(err.retryable).toBe(true);
    expect(s.seen).toHaveLength(1);
    expectNoKey(err);
  });

  it('closes an idle socket before a middlebox forgets it: a create after a quiet spell is not cut', async () => {
    // Kept idle longer than the middlebox remembers, a socket is reset when
    // reused, and a create sent on it has an unknown outcome.
    const kept = await forgetfulServer(150);
    const keeps = client(kept.url, { idleSocketMs: 60_000 });
    await keeps.createCompany({ name: 'First' });
    await sleep(400);
    const cut = await failure(keeps.createCompany({ name: 'After a quiet spell' }));
    expect(cut).toBeInstanceOf(NetworkError);
    expect(cut.mayHaveApplied).toBe(true);
    expect(kept.stats).toEqual({ connections: 1, requests: 1, resets: 1 });

    // Closed by us first, the next create opens a new socket and lands.
    const s = await forgetfulServer(300);
    const c = client(s.url, { idleSocketMs: 100 });
    await c.createCompany({ name: 'First' });
    await sleep(400);
    expect(await c.createCompany({ name: 'After a quiet spell' })).toEqual({ id: 2 });
    expect(s.stats).toEqual({ connections: 2, requests: 2, resets: 0 });
  });

  it('an answer slower than the idle timeout still arrives, and the busy socket is reused', async () => {
    const s = await forgetfulServer(10_000, 250);
    const c = client(s.url, { idleSocketMs: 100 });
    expect(await c.createCompany({ name: 'Slow' })).toEqual({ id: 1 });
    expect(await c.createCompany({ name: 'Slow again' })).toEqual({ id: 2 });
    expect(s.stats).toEqual({ connections: 1, requests: 2, resets: 0 });
  });

  it(`closes idle sockets after ${DEFAULT_IDLE_SOCKET_MS} ms by default`, async () => {
    const s = await forgetfulServer(DEFAULT_IDLE_SOCKET_MS + 200);
    const c = client(s.url);
    await c.createCompany({ name: 'First' });
    await sleep(DEFAULT_IDLE_SOCKET_MS + 500);
    expect(await c.createCompany({ name: 'Next' })).toEqual({ id: 2 });
    expect(s.stats).toEqual({ connections: 2, requests: 2, resets: 0 });
  });

  it('connection refused was not applied', async () => {
    const port = await freePort();
    const err = await failure(client(`http://127.0.0.1:${port}`).createCompany({ name: 'Nobody' }));
    expect(err).toBeInstanceOf(NetworkError);
    expect(err.mayHaveApplied).toBe(false);
    expect(err.retryable).toBe(true);
    expectNoKey(err);
  });

  it('refuses a cross-origin next: the foreign server receives nothing', async () => {
    const foreign = await scripted((_q, res) =>
      json(res, 200, { count: 0, next: null, previous: null, results: [] }),
    );
    const home = await scripted((_q, res) =>
      json(res, 200, {
        count: 2,
        next: `${foreign.url}/companies?page=2`,
        previous: null,
        results: [{ id: 1 }],
      }),
    );
    const c = client(home.url);
    const got: unknown[] = [];
    let err: unknown;
    try {
      for await (const co of c.companies()) got.push(co);
    } catch (e) {
      err = e;
    }
    expect(got).toEqual([{ id: 1 }]);
    expect(err).toBeInstanceOf(CrossOriginError);
    expect((err as CrossOriginError).code).toBe('platform.cross-origin');
    expect(await failure(c.companiesPage(`${foreign.url}/companies?page=2`))).toBeInstanceOf(
      CrossOriginError,
    );
    // The generic lists refuse it too.
    const members = await scripted((_q, res) =>
      json(res, 200, { next: `${foreign.url}/members?page=2`, results: [] }),
    );
    expect(await failure(client(members.url).members().next())).toBeInstanceOf(CrossOriginError);
    expect(foreign.seen).toHaveLength(0);
  });

  it('iterates a page chain (absolute and relative next), an array and a single record', async () => {
    const s = await scripted((req, res) => {
      const u = new URL(req.url!, 'http://x');
      if (u.pathname === '/companies') {
        const page = Number(u.searchParams.get('page') ?? '1');
        const next =
          page === 1 ? `${s.url}/companies?page=2` : page === 2 ? '/companies?page=3' : null;
        return json(res, 200, {
          count: 5,
          next,
          previous: null,
          results: page === 3 ? [{ id: 5 }] : [{ id: page * 2 - 1 }, { id: page * 2 }],
        });
      }
      if (u.pathname === '/tasks') return json(res, 200, [{ id: 1 }, { id: 2 }]);
      if (u.pathname === '/workflows') return json(res, 200, { id: 7, name: 'Kickoff' });
      if (u.pathname === '/variables') return json(res, 200, {});
      return json(res, 404, { detail: 'Not found.' });
    });
    const c = client(s.url);
    expect((await c.listCompanies()).map((x) => x.id)).toEqual([1, 2, 3, 4, 5]);
    const tasks = [];
    for await (const t of c.tasks()) tasks.push(t.id);
    expect(tasks).toEqual([1, 2]);
    const wfs = [];
    for await (const w of c.workflows()) wfs.push(w);
    expect(wfs).toEqual([{ id: 7, name: 'Kickoff' }]);
    const vars = [];
    for await (const v of c.variables()) vars.push(v);
    expect(vars).toEqual([]);
  });

  it('stops a next loop', async () => {
    const s = await scripted((_q, res) =>
      json(res, 200, { count: 1, next: '/companies', previous: null, results: [] }),
    );
    const err = await failure(client(s.url).listCompanies());
    expect(err).toBeInstanceOf(InvalidResponseError);
    expect(err.message).toMatch(/already read/);
  });

  it('aborts a request in flight', async () => {
    const s = await scripted(() => {
      /* never answer */
    });
    const ac = new AbortController();
    setTimeout(() => ac.abort(new Error('shutdown')), 50);
    const started = Date.now();
    const err = await failure(
      client(s.url, { timeoutMs: 10_000 }).getAccount({ signal: ac.signal }),
    );
    expect(err).toBeInstanceOf(AbortedError);
    expect((err.cause as Error).message).toBe('shutdown');
    expect(Date.now() - started).toBeLessThan(5_000);
    // An already-aborted signal sends nothing.
    const before = s.seen.length;
    expect(await failure(client(s.url).getAccount({ signal: ac.signal }))).toBeInstanceOf(
      AbortedError,
    );
    expect(s.seen.length).toBe(before);
  });

  it('names the field of a wrong type, keeps unknown fields, and refuses non-JSON', async () => {
    const s = await scripted((req, res) => {
      if (req.url === '/companies/1')
        return json(res, 200, { id: 1, crm_company_id: 'twelve', extra: { a: 1 } });
      if (req.url === '/companies/2') return json(res, 200, { id: 2, extra: { a: 1 } });
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>maintenance</html>');
    });
    const c = client(s.url);
    const err = (await failure(c.getCompany(1))) as InvalidResponseError;
    expect(err).toBeInstanceOf(InvalidResponseError);
    expect(err.code).toBe('platform.invalid-response');
    expect(err.message).toContain('crm_company_id');
    expect(err.message).toMatch(/expected number/);
    expect(err.issues[0]).toMatch(/^crm_company_id: /);
    expect(await c.getCompany(2)).toEqual({ id: 2, extra: { a: 1 } });
    const html = await failure(c.getAccount());
    expect(html).toBeInstanceOf(InvalidResponseError);
    expect(html.body).toContain('maintenance');
    // A POST answered 2xx with a bad body did go through.
    const post = await failure(c.createCompany({ name: 'x' }));
    expect(post.mayHaveApplied).toBe(true);
  });

  it('names the failing item of a listing by its path', async () => {
    const s = await scripted((_q, res) =>
      json(res, 200, {
        count: 2,
        next: null,
        previous: null,
        results: [{ id: 1 }, { id: 2, name: 5 }],
      }),
    );
    const err = (await failure(client(s.url).listCompanies())) as InvalidResponseError;
    expect(err.issues[0]).toMatch(/^results\.1\.name: /);
  });

  it('round-trips 12-digit and 2^53-1 integers exactly', async () => {
    const s = await scripted((_q, res, body) => {
      res.writeHead(201, { 'content-type': 'application/json' });
      res.end(body.replace(/^\{/, '{"id":900719925474099,'));
    });
    const c = client(s.url);
    const out = await c.createCompany({ name: 'Big', crm_company_id: 123456789012 });
    expect(out.crm_company_id).toBe(123456789012);
    expect(out.id).toBe(900719925474099);
    expect(s.seen[0]!.body).toContain('"crm_company_id":123456789012');
    const max = await c.createCompany({ name: 'Max', crm_company_id: Number.MAX_SAFE_INTEGER });
    expect(max.crm_company_id).toBe(9007199254740991);
  });

  it('refuses a beyond-2^53 integer in a response', async () => {
    const s = await scripted((_q, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"id":1,"crm_company_id":9007199254740993}');
    });
    const err = await failure(client(s.url).getCompany(1));
    expect(err).toBeInstanceOf(InvalidResponseError);
    expect(err.message).toContain('crm_company_id');
  });

  it('checks request bodies before sending anything', async () => {
    const s = await scripted((_q, res) => json(res, 201, {}));
    const c = client(s.url);
    const bad = { name: 'x', nonsense: true } as unknown as { name: string };
    const err = await failure(c.createCompany(bad));
    expect(err).toBeInstanceOf(InvalidRequestError);
    expect(err.message).toContain('nonsense');
    const email = await failure(c.createMember({ email: 'not-an-email' }));
    expect((email as InvalidRequestError).issues[0]).toMatch(/^email: /);
    expect(s.seen).toHaveLength(0);
  });

  it('reports DRF field messages from a 400', async () => {
    const s = await scripted((_q, res) => json(res, 400, { name: ['This field is required.'] }));
    const err = (await failure(client(s.url).createCompany({}))) as BadRequestError;
    expect(err).toBeInstanceOf(BadRequestError);
    expect(err.fields).toEqual({ name: ['This field is required.'] });
    expect(err.mayHaveApplied).toBe(false);
  });

  it('follows no redirect: a 3xx is an error, and its Location receives nothing', async () => {
    const elsewhere = await scripted((_q, res) => json(res, 200, { id: 9 }));
    const s = await scripted((_q, res) => {
      res.writeHead(302, { location: `${elsewhere.url}/companies/1` });
      res.end();
    });
    const err = await failure(client(s.url).getCompany(1));
    expect(err.statusCode).toBe(302);
    expect(s.seen).toHaveLength(1);
    expect(elsewhere.seen).toHaveLength(0);
    expectNoKey(err);
  });

  it('speaks https through the https agent, and refuses a certificate it cannot check', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'crm-sync-https-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    // A self-signed certificate for 127.0.0.1: trusted only where it is given as the CA.
    execFileSync(
      'openssl',
      [
        ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1'],
        ...['-nodes', '-days', '1', '-keyout', 'key.pem', '-out', 'cert.pem'],
        ...['-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'],
      ],
      { cwd: dir, stdio: 'ignore' },
    );
    const cert = readFileSync(join(dir, 'cert.pem'));
    const seen: string[] = [];
    const server = createHttpsServer(
      { key: readFileSync(join(dir, 'key.pem')), cert },
      (req, res) => {
        seen.push(`${req.method} ${req.url} ${req.headers.authorization}`);
        json(res, 200, { id: 7, name: 'Tls' });
      },
    );
    const url = `https://127.0.0.1:${await listening(server)}`;
    const trusting = new HttpsAgent({ keepAlive: true, ca: cert });
    cleanups.push(() => trusting.destroy());
    expect(await client(url, { agent: { https: trusting } }).getCompany(7)).toEqual({
      id: 7,
      name: 'Tls',
    });
    expect(seen).toEqual([`GET /companies/7 ${KEY}`]);
    const err = await failure(client(url).getCompany(7));
    expect(err).toBeInstanceOf(NetworkError);
    expect(err.mayHaveApplied).toBe(false);
    expect(seen).toHaveLength(1);
    expectNoKey(err);
  });

  it('never lets the key into errors or log lines, even when the server echoes it', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString('utf8'));
        done();
      },
    });
    const logger = createLogger({ level: 'debug', destination: sink, pretty: false });
    const s = await scripted((req, res) => {
      if (req.url === '/account')
        return json(res, 401, { detail: `Invalid token: ${req.headers.authorization}` });
      if (req.url === '/billing') {
        res.writeHead(500, { 'content-type': 'text/plain' });
        return res.end(`boom ${req.headers.authorization}`);
      }
      req.socket.destroy();
    });
    const c = client(s.url, { logger });
    const errors = [
      await failure(c.getAccount()),
      await failure(c.billing()),
      await failure(c.defaults()),
      await failure(c.companiesPage('http://evil.example/companies?page=2')),
    ];
    expect(errors[0]).toBeInstanceOf(UnauthorizedError);
    expect(errors[0]!.retryable).toBe(false);
    expect(errors[0]!.message).toContain('[REDACTED]');
    for (const err of errors) {
      expectNoKey(err);
      logger.error({ err }, 'request failed');
    }
    const out = lines.join('');
    expect(out).toContain('"route":"/account"');
    expect(out).toContain('"status":401');
    expect(out).toContain('"durationMs"');
    expect(out).not.toContain(KEY);
    expect(out.toLowerCase()).not.toContain('authorization');
  });
});
