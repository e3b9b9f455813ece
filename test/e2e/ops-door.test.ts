/**
 * The doors around the API, tried against `crm-sync start` as a DNS-rebinding
 * page, a token holder and a forged queue entry would: every route answers
 * only a loopback Host without a token, the queue dashboard changes nothing,
 * errors carry no stack or path, and a run's source override never carries
 * the job's credentials to another origin.
 */
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cliEnv,
  companiesCsv,
  killAll,
  requireBuild,
  runCli,
  spawnCli,
  startSandboxProcess,
  tempDir,
  waitUntil,
  type CliProcess,
  type SandboxProcess,
} from '../harness/cli.js';
import { useRedis } from '../harness/redis.js';

const { redis, prefix, url: redisUrl } = useRedis();
const apiKey = 'sk_live_CRMSYNC_door_Hq2vN8xR4tLm7Kp1Wd9Hs3Jf6Gb0Yc5B';
const crmToken = 'crm_token_DOOR_5Jx8Lq2Vn7Rb4Tz9';
const files = tempDir('e2e-door');

/** An HTTP server serving a companies CSV on every path, recording what it was sent. */
interface ExportServer {
  url: string;
  seen: { path: string; headers: IncomingHttpHeaders }[];
  server: Server;
}

async function exportServer(rows: number): Promise<ExportServer> {
  const seen: ExportServer['seen'] = [];
  const csv = companiesCsv(rows);
  const server = createServer((req, res) => {
    seen.push({ path: req.url ?? '', headers: req.headers });
    res.setHeader('content-type', 'text/csv');
    res.end(csv);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, seen, server };
}

/** A raw request: any Host header, any path (not normalised), any method. */
function raw(
  base: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<{ status: number; headers: IncomingHttpHeaders; text: string }> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, method, path, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

let sandbox: SandboxProcess;
let home: ExportServer;
let foreign: ExportServer;

beforeAll(async () => {
  requireBuild();
  sandbox = await startSandboxProcess(apiKey);
  home = await exportServer(5);
  foreign = await exportServer(5);
  const job = (source: string[]) =>
    [
      'entity: companies',
      'source:',
      ...source,
      'mapping: hubspot-companies',
      'thresholds:',
      '  maxChangeShare: 1',
      '',
    ].join('\n');
  // A CRM pull with a credential header of its own.
  files.write(
    'pull.yaml',
    job([
      `  url: ${home.url}/companies.csv`,
      '  format: csv',
      '  headers:',
      '    authorization: Bearer ${CRM_TOKEN}',
    ]),
  );
  // A URL source read with CRM_SOURCE_AUTHORIZATION, no headers of its own.
  files.write('plain.yaml', job([`  url: ${home.url}/plain.csv`, '  format: csv']));
}, 60_000);

afterAll(async () => {
  await killAll();
  home.server.close();
  foreign.server.close();
  files.remove();
});

function env(extra: Record<string, string | number> = {}) {
  return cliEnv({
    REDIS_URL: redisUrl,
    CRM_SYNC_PREFIX: prefix,
    CRM_SYNC_JOBS_DIR: files.dir,
    PLATFORM_BASE_URL: sandbox.url,
    PLATFORM_API_KEY: apiKey,
    PLATFORM_RATE_LIMIT: 200,
    CRM_TOKEN: crmToken,
    CRM_SOURCE_AUTHORIZATION: `Bearer ${crmToken}-ambient`,
    OPS_PORT: 0,
    ...extra,
  });
}

async function start(extra: Record<string, string | number> = {}): Promise<{
  proc: CliProcess;
  url: string;
}> {
  const proc = spawnCli(['start'], env(extra));
  const line = await proc.waitForLine(/ops server listening/, { timeoutMs: 30_000 });
  const url = (JSON.parse(line) as { url: string }).url;
  return { proc, url };
}

const sentCredential = (s: ExportServer) =>
  s.seen.filter((r) => JSON.stringify(r.headers).includes(crmToken));

describe('crm-sync start without OPS_TOKEN', () => {
  it('answers no rebound Host on any route, and its queue dashboard changes nothing', async () => {
    const { proc, url } = await start();
    try {
      const port = new URL(url).port;
      const routes: [string, string][] = [
        ['GET', '/'],
        ['GET', '/console/console.js'],
        ['GET', '/healthz'],
        ['GET', '/metrics'],
        ['GET', '/api/jobs'],
        ['POST', '/api/runs'],
        ['GET', '/queues'],
        ['GET', '/queues/api/queues'],
        ['POST', '/queues/api/queues/sync-runs/add'],
        ['PUT', '/queues/api/queues/sync-runs/pause'],
        ['PUT', '/queues/api/queues/sync-runs/empty'],
      ];
      const addBody = JSON.stringify({
        name: 'pull',
        data: { job: 'pull', source: `${foreign.url}/x.csv`, force: true },
      });
      for (const [method, path] of routes) {
        const r = await raw(
          url,
          method,
          path,
          { host: `evil.example:${port}`, 'content-type': 'application/json' },
          method === 'GET' ? undefined : addBody,
        );
        expect(r.status, `${method} ${path}`).toBe(403);
        expect(r.text, `${method} ${path}`).toMatch(/loopback host/);
      }

      // Loopback, as the operator's own browser: looking works, changing does not.
      const local = { host: `127.0.0.1:${port}`, 'content-type': 'application/json' };
      expect((await raw(url, 'GET', '/queues/api/queues', local)).status).toBe(200);
      for (const [method, path] of [
        ['POST', '/queues/api/queues/sync-runs/add'],
        ['PUT', '/queues/api/queues/sync-runs/pause'],
        ['PUT', '/queues/api/queues/sync-runs/empty'],
        ['PUT', '/queues/api/queues/sync-runs/clean/completed'],
        ['PUT', '/queues/api/queues/sync-runs/obliterate'],
        ['PUT', '/queues/api/queues/sync-runs/retry/failed'],
        ['DELETE', '/queues/api/queues/sync-runs/x'],
      ] as const) {
        const r = await raw(url, method, path, local, addBody);
        expect(r.status, `${method} ${path}`).toBe(405);
        expect(r.headers.allow).toBe('GET, HEAD');
      }
      const queue = new Queue('sync-runs', { connection: redis, prefix });
      try {
        expect(await queue.getJobCounts()).toMatchObject({ waiting: 0, active: 0, delayed: 0 });
        expect(await queue.isPaused()).toBe(false);
      } finally {
        await queue.close();
      }
      expect(foreign.seen).toEqual([]);
    } finally {
      proc.kill();
      await proc.exited;
    }
  });

  it('tells no stack, no path and no other key; answers are not cached or sniffed', async () => {
    const { proc, url } = await start({ NODE_ENV: 'development' });
    try {
      const answers = await Promise.all([
        raw(url, 'GET', '/console/..%2fcli.js'),
        raw(url, 'GET', '/console/..%2f..%2fpackage.json'),
        raw(url, 'GET', '/console/nothing.js'),
        raw(url, 'GET', '/api/runs/x:plan'),
        raw(url, 'GET', '/api/runs/..%2f..%2fconfig'),
        raw(url, 'GET', '/api/jobs/nope/plan'),
        raw(url, 'POST', '/api/runs', { 'content-type': 'application/json' }, '{"job":"nope"}'),
        raw(url, 'GET', '/nowhere'),
      ]);
      for (const a of answers) {
        expect(a.status).toBeGreaterThanOrEqual(400);
        expect(a.status).toBeLessThan(500);
        expect(a.text).not.toMatch(/\n\s+at |node_modules|\/dist\/|\/src\//);
        expect(a.text).not.toContain(files.dir);
        expect(a.text).not.toContain(process.cwd());
        expect(a.text).not.toMatch(/WRONGTYPE|ERR /);
      }
      expect(answers[3]!.status).toBe(404);
      expect((JSON.parse(answers[6]!.text) as { error: string }).error).toMatch(
        /^no job "nope" in crm-sync-e2e-door-\w+ \(have: plain, pull\)$/,
      );

      for (const path of ['/api/jobs', '/api/runs', '/metrics', '/api/runs/x:plan']) {
        const r = await raw(url, 'GET', path);
        expect(r.headers['cache-control'], path).toBe('no-store');
        expect(r.headers['x-content-type-options'], path).toBe('nosniff');
        expect(r.headers['x-powered-by'], path).toBeUndefined();
      }
      for (const path of ['/queues', '/queues/api/queues']) {
        const r = await raw(url, 'GET', path);
        expect(r.status, path).toBe(200);
        expect(r.headers['x-powered-by'], path).toBeUndefined();
        expect(r.headers['content-security-policy'], path).toMatch(/script-src 'self'/);
        expect(r.headers['content-security-policy'], path).toMatch(/frame-ancestors 'none'/);
      }
    } finally {
      proc.kill();
      await proc.exited;
    }
  });
});

describe('crm-sync start with OPS_TOKEN', () => {
  const token = 'ops-token-DOOR-4Fj9Lk2Qw8Zx';

  it('needs the token, with the Bearer scheme in any case; a padded token is refused at start', async () => {
    const padded = await runCli(['start'], env({ OPS_TOKEN: ` ${token} ` }), 30_000);
    expect(padded.code).not.toBe(0);
    expect(padded.stderr).toMatch(/OPS_TOKEN: must not start or end with white space/);
    const blank = await runCli(['start'], env({ OPS_TOKEN: ' '.repeat(20) }), 30_000);
    expect(blank.code).not.toBe(0);
    expect(blank.stderr).toMatch(/OPS_TOKEN/);

    const { proc, url } = await start({ OPS_TOKEN: token });
    try {
      for (const path of ['/api/jobs', '/metrics', '/queues', '/queues/api/queues']) {
        expect((await raw(url, 'GET', path)).status, path).toBe(401);
        expect(
          (await raw(url, 'GET', path, { authorization: `Bearer ${token}x` })).status,
          path,
        ).toBe(401);
        for (const scheme of ['Bearer', 'bearer', 'BEARER']) {
          const r = await raw(url, 'GET', path, { authorization: `${scheme} ${token}` });
          expect(r.status, `${scheme} ${path}`).toBe(200);
        }
      }
      // The dashboard stays read-only for a token holder too.
      const add = await raw(
        url,
        'POST',
        '/queues/api/queues/sync-runs/add',
        { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        JSON.stringify({ name: 'pull', data: { job: 'pull', force: true } }),
      );
      expect(add.status).toBe(405);
      for (const path of ['/healthz', '/', '/console/console.js'])
        expect((await raw(url, 'GET', path)).status, path).toBe(200);
    } finally {
      proc.kill();
      await proc.exited;
    }
  });
});

describe("a run's source override", () => {
  it("sends the job's credentials only to the origin of the job's own source", async () => {
    const { proc } = await start();
    try {
      // Another origin, for a job whose source needs its headers: refused, nothing fetched.
      const refused = await runCli(
        ['run', 'pull', '--source', `${foreign.url}/x.csv`, '--wait', '--json'],
        env(),
      );
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toMatch(/not the origin of the job's source/);
      expect(foreign.seen).toEqual([]);

      // The job's own origin, another path: its headers go with it.
      const own = await runCli(
        ['run', 'pull', '--source', `${home.url}/other.csv`, '--wait', '--json'],
        env(),
      );
      expect(own.code, own.stderr.slice(-1500)).toBe(0);
      const ownRequest = home.seen.find((r) => r.path === '/other.csv');
      expect(ownRequest?.headers.authorization).toBe(`Bearer ${crmToken}`);

      // Another origin for a job without headers: read, but without CRM_SOURCE_AUTHORIZATION.
      const plain = await runCli(
        ['run', 'plain', '--source', `${foreign.url}/plain.csv`, '--wait', '--json'],
        env(),
      );
      expect(plain.code, plain.stderr.slice(-1500)).toBe(0);
      expect(foreign.seen.map((r) => r.path)).toEqual(['/plain.csv']);
      expect(foreign.seen[0]!.headers.authorization).toBeUndefined();
      expect(sentCredential(foreign)).toEqual([]);
      // ...while the job's own source still gets it.
      const ownPlain = await runCli(['run', 'plain', '--wait', '--json'], env());
      expect(ownPlain.code, ownPlain.stderr.slice(-1500)).toBe(0);
      expect(home.seen.find((r) => r.path === '/plain.csv')?.headers.authorization).toBe(
        `Bearer ${crmToken}-ambient`,
      );

      // A run request written straight into the queue is checked by the worker the same way.
      const queue = new Queue('sync-runs', { connection: redis, prefix });
      try {
        await queue.add(
          'pull',
          { job: 'pull', source: `${foreign.url}/forged.csv`, force: true },
          { jobId: 'run-forged-1' },
        );
      } finally {
        await queue.close();
      }
      await waitUntil(async () => {
        const r = await runCli(['show', 'run-forged-1', '--json'], env(), 30_000);
        return r.code === 0 && (JSON.parse(r.stdout) as { status: string }).status === 'failed';
      }, 'the forged run to fail');
      const shown = await runCli(['show', 'run-forged-1', '--json'], env());
      expect(shown.stdout).toMatch(/not the origin of the job's source/);
      expect(foreign.seen.map((r) => r.path)).toEqual(['/plain.csv']);
      expect(sentCredential(foreign)).toEqual([]);
    } finally {
      proc.kill();
      await proc.exited;
    }
  });
});
