/**
 * crm-sync on each Redis topology it supports, configured as production
 * configures it (loadConfig from the variables) and driven through the worker
 * service: a Redis Cluster (seeded with a primary that does not own the
 * prefix's slot), a Sentinel-managed primary, one node with an ACL user whose
 * password is read from a file, and one node, a 3-primary cluster and a
 * sentinel with its primary reached only over TLS (a CA made by openssl here,
 * the certificate checked against REDIS_TLS_SERVERNAME). Each runs a short sync twice: every record created
 * once, then nothing written; the second is waited for as `crm-sync run --wait` waits, woken by
 * its job's end on the runs queue's events stream.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { waitForRun } from '../../src/engine/run-summary.js';
import { startWorkerService } from '../../src/engine/worker-service.js';
import { watchRunEnd } from '../../src/queue/run-end-watch.js';
import { createShutdown } from '../../src/ops/shutdown.js';
import { redactSecrets, silentLogger } from '../../src/log.js';
import {
  RedisUnavailableError,
  checkEvictionPolicy,
  closeRedis,
  connectProducer,
  createRedis,
  whenReady,
} from '../../src/redis/connection.js';
import {
  companyRows,
  countWrites,
  hubspotCells,
  hubspotJob,
  HUBSPOT_HEADER,
  statsSince,
  useEngines,
  type EngineHarness,
} from '../harness/engine.js';
import {
  freePort,
  removeDir,
  startRedisServer,
  TEST_SERVER_ARGS,
} from '../harness/redis-server.js';
import { callPort, startRedisCluster, startRedisSentinel } from '../harness/redis-topology.js';
import { startScheduler } from '../../src/schedule/scheduler.js';
import { lastSlotKey } from '../../src/schedule/slot.js';

const engine = useEngines();
const cleanups: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** 30 companies synced, then synced again: 30 created, then 30 unchanged and no write. */
async function syncTwice(h: EngineHarness): Promise<void> {
  const rows = companyRows(30);
  const path = h.writeCsv('companies.csv', HUBSPOT_HEADER, rows.map(hubspotCells));
  h.writeJob('companies', hubspotJob(path));
  const first = await h.runJob('companies');
  expect(first.error).toBeUndefined();
  expect(first.status).toBe('completed');
  expect(first.counts).toMatchObject({ read: 30, created: 30, failed: 0 });
  const ids = (await h.dump()).companies.map((c) => String(c.external_id));
  expect(new Set(ids).size).toBe(30);
  expect(ids).toHaveLength(30);
  const before = await h.stats();
  const runId = await h.enqueue('companies');
  const ends = await watchRunEnd(h.producer.redis, h.config.prefix, runId);
  // A poll longer than the test may take: only the job's end wakes the wait in time.
  const second = await waitForRun(h.store, runId, {
    pollMs: 600_000,
    wake: (ms) => ends.wait(ms),
  }).finally(() => ends.close());
  expect(second?.status).toBe('completed');
  expect(second?.counts).toMatchObject({ read: 30, created: 0, updated: 0, unchanged: 30 });
  expect(countWrites(statsSince(before, await h.stats()))).toBe(0);
}

describe('Redis Cluster', () => {
  it('syncs through a seed that does not own the slot; every key on one primary; scheduler claims; eviction policy read on each', async () => {
    const cluster = await startRedisCluster({ primaries: 3 });
    cleanups.push(() => cluster.close());
    // The state's prefix, known before the engine starts, to pick a seed that does not own its slot.
    const prefix = `{crm-sync-cluster-${Date.now().toString(36)}}`;
    const owner = await cluster.slotOwner(prefix);
    const primaries: typeof cluster.nodes = [];
    for (const n of cluster.nodes) {
      if (String(await n.call('ROLE')).startsWith('master')) primaries.push(n);
    }
    expect(primaries).toHaveLength(3);
    const seed = primaries.find((n) => n.port !== owner.primary.port)!.address;

    // REDIS_URL (the harness's single node) stays set beside it: it gives no address.
    const h = await engine({ env: { REDIS_CLUSTER_NODES: seed, CRM_SYNC_PREFIX: prefix } });
    expect(h.config.redis.kind).toBe('cluster');
    expect(h.producer.redis).toBeInstanceOf(Cluster);
    await syncTwice(h);

    // Every key under the prefix, all on the slot's owner; the other primaries hold none.
    const all = (await owner.primary.call('KEYS', '*')) as string[];
    expect(all.length).toBeGreaterThan(10);
    expect(all.filter((k) => !k.startsWith(prefix))).toEqual([]);
    for (const n of primaries) {
      if (n.port !== owner.primary.port) expect(await n.call('DBSIZE')).toBe(0);
    }

    // The scheduler's slot claim (SET NX) and last-slot script, from two replicas.
    const enqueued: string[] = [];
    const enqueue = async (job: string, slot: string) => {
      enqueued.push(`${job}@${slot}`);
      return { runId: `run-${enqueued.length}`, attached: false };
    };
    const jobs = [{ name: 'companies', schedule: '0 3 * * *' }];
    const replicas = [createRedis('worker', h.config.redis), createRedis('worker', h.config.redis)];
    try {
      const [a, b] = await Promise.all(
        replicas.map((redis) => startScheduler({ jobs, redis, prefix, enqueue })),
      );
      const at = new Date('2026-11-23T03:00:00Z');
      const outcomes = await Promise.all([a!.fire('companies', at), b!.fire('companies', at)]);
      expect(outcomes.map((o) => o.outcome).sort()).toEqual(['claimed-elsewhere', 'enqueued']);
      expect(enqueued).toHaveLength(1);
      expect(await replicas[0]!.get(lastSlotKey(prefix, 'companies'))).toBe(
        enqueued[0]!.split('@')[1],
      );
      await Promise.all([a!.stop(), b!.stop()]);
    } finally {
      await Promise.all(replicas.map((r) => closeRedis(r)));
    }

    // REDIS_URL alone at a cluster node (MOVED for other slots): refused at start, by the
    // producer and by the worker service, with the setting to use.
    const asSingle = loadConfig({
      ...h.config.sourceEnv,
      REDIS_URL: `redis://${seed}`,
      REDIS_CLUSTER_NODES: '',
    });
    const refusal = `REDIS_URL: redis://${seed} is a Redis Cluster node; set REDIS_CLUSTER_NODES=${seed}`;
    const byProducer = await connectProducer(asSingle.redis).catch((e: unknown) => e);
    expect(byProducer).toBeInstanceOf(ConfigError);
    expect((byProducer as ConfigError).problems[0]).toContain(refusal);
    const shutdown = createShutdown(silentLogger, { deadlineMs: 2_000 });
    try {
      const byWorker = await startWorkerService({
        config: asSingle,
        logger: silentLogger,
        shutdown,
      }).catch((e: unknown) => e);
      expect(byWorker).toBeInstanceOf(ConfigError);
      expect((byWorker as ConfigError).problems[0]).toContain(refusal);
    } finally {
      await shutdown.shutdown('test');
    }

    // One primary (not the slot's owner) evicts: the warning names it.
    const [host, port] = seed.split(':');
    await callPort(Number(port), 'CONFIG', 'SET', 'maxmemory-policy', 'allkeys-lru');
    const warnings: unknown[][] = [];
    const logger = { warn: (...args: unknown[]) => warnings.push(args) };
    const redis = createRedis('worker', h.config.redis);
    try {
      await whenReady(redis);
      expect(await checkEvictionPolicy(redis, logger as never)).toBe('allkeys-lru');
      expect(warnings).toHaveLength(1);
      expect(warnings[0]![0]).toMatchObject({
        maxmemoryPolicy: 'allkeys-lru',
        node: `${host}:${port}`,
      });
    } finally {
      await closeRedis(redis);
    }
  });

  it('a producer refuses a cluster or sentinels it cannot reach, at once, naming them', async () => {
    const port = await freePort();
    const config = loadConfig({ REDIS_CLUSTER_NODES: `127.0.0.1:${port}` });
    const started = Date.now();
    const err = await connectProducer(config.redis).catch((e: unknown) => e);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(err).toBeInstanceOf(RedisUnavailableError);
    expect((err as Error).message).toBe(
      `Redis at redis://127.0.0.1:${port} (cluster) is not reachable (ECONNREFUSED)`,
    );
    const sentinels = loadConfig({
      REDIS_SENTINELS: `127.0.0.1:${port}`,
      REDIS_SENTINEL_NAME: 'mymaster',
    });
    // ioredis says only that no sentinel answered; the sentinel asked alone says why.
    expect(
      ((await connectProducer(sentinels.redis).catch((e: unknown) => e)) as Error).message,
    ).toBe(
      `Redis at redis://127.0.0.1:${port}/0 (sentinel mymaster) is not reachable (sentinel 127.0.0.1:${port}: ECONNREFUSED)`,
    );
  });
});

describe('Redis Sentinel', () => {
  it('asks the sentinels for the primary and syncs on it', async () => {
    const group = await startRedisSentinel();
    cleanups.push(() => group.close());
    const h = await engine({
      env: { REDIS_SENTINELS: group.seeds, REDIS_SENTINEL_NAME: group.name },
    });
    expect(h.config.redis.kind).toBe('sentinel');
    await syncTwice(h);
    // Every key is under the prefix, on the primary.
    const all = (await group.primary.call('KEYS', '*')) as string[];
    expect(all.length).toBeGreaterThan(10);
    expect(all.filter((k) => !k.startsWith(h.prefix))).toEqual([]);

    // A name the sentinels do not monitor: a producer says so at once.
    const wrong = loadConfig({
      REDIS_SENTINELS: group.seeds,
      REDIS_SENTINEL_NAME: 'no-such-primary',
    });
    const started = Date.now();
    const err = await connectProducer(wrong.redis).catch((e: unknown) => e);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(err).toBeInstanceOf(RedisUnavailableError);
    expect((err as Error).message).toBe(
      `Redis at redis://${group.seeds}/0 (sentinel no-such-primary) is not reachable (sentinels: ERR No such master with that name)`,
    );
  });
});

describe('an ACL user with its password in a file', () => {
  it('syncs as that user, allowed only the keys under the prefix; a wrong password fails fast without being printed', async () => {
    const server = await startRedisServer();
    cleanups.push(async () => {
      await server.stop();
      removeDir(server.dir);
    });
    const dir = mkdtempSync(join(tmpdir(), 'crm-sync-acl-'));
    cleanups.push(() => removeDir(dir));
    const password = 'acl-file-pass-6f2k';
    // The user may touch only keys under crm-sync's prefix.
    const prefix = `{crm-sync-acl-${Date.now().toString(36)}}`;
    await callPort(
      server.port,
      'ACL',
      'SETUSER',
      'crm-sync',
      'on',
      `>${password}`,
      `~${prefix}*`,
      '&*',
      '+@all',
    );
    // Nobody else gets in: the default user is switched off (this server is ours).
    await callPort(server.port, 'ACL', 'SETUSER', 'default', 'off');
    const passwordFile = join(dir, 'redis-password');
    writeFileSync(passwordFile, `${password}\n`);
    const env = {
      REDIS_URL: server.url,
      REDIS_USERNAME: 'crm-sync',
      REDIS_PASSWORD_FILE: passwordFile,
      CRM_SYNC_PREFIX: prefix,
    };

    const h = await engine({ env });
    expect(h.config.redis).toMatchObject({ username: 'crm-sync', password });
    await syncTwice(h);

    const wrongFile = join(dir, 'wrong');
    writeFileSync(wrongFile, 'not-the-pass-9q\n');
    const wrong = loadConfig({ ...env, REDIS_PASSWORD_FILE: wrongFile });
    const err = await connectProducer(wrong.redis).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RedisUnavailableError);
    expect((err as Error).message).toMatch(
      /^Redis at redis:\/\/127\.0\.0\.1:\d+ is not reachable \(WRONGPASS/,
    );
    expect((err as Error).message).not.toContain('not-the-pass-9q');
    expect(redactSecrets(`x ${password} not-the-pass-9q`)).toBe('x [REDACTED] [REDACTED]');
  });
});

/** Why a producer configured by `env` cannot connect (it must not). */
async function refusedWith(env: Record<string, string>): Promise<string> {
  const err = await connectProducer(loadConfig(env).redis).catch((x: unknown) => x);
  expect(err).toBeInstanceOf(RedisUnavailableError);
  return (err as Error).message;
}

/** A CA and a certificate for `redis.test` signed by it, made by openssl in `dir`. */
function makeCertificates(dir: string): { ca: string; cert: string; key: string } {
  const ssl = (...args: string[]): void => {
    execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
  };
  const key = ['-newkey', 'rsa:2048', '-nodes', '-days', '1'];
  ssl(
    'req',
    '-x509',
    ...key,
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-subj',
    '/CN=crm-sync test CA',
  );
  ssl('req', ...key, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=redis.test');
  writeFileSync(join(dir, 'ext.cnf'), 'subjectAltName=DNS:redis.test\n');
  ssl(
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.pem',
    '-days',
    '1',
    '-extfile',
    'ext.cnf',
  );
  return { ca: join(dir, 'ca.pem'), cert: join(dir, 'server.pem'), key: join(dir, 'server.key') };
}

/** A redis-server that speaks TLS only (no plain port), on a free port; stopped after the file. */
async function startTlsRedis(
  dir: string,
  certs: { ca: string; cert: string; key: string },
  extra: string[] = [],
): Promise<number> {
  const port = await freePort();
  await startTlsProcess(
    [
      '--port',
      '0',
      '--tls-port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--tls-cert-file',
      certs.cert,
      '--tls-key-file',
      certs.key,
      '--tls-ca-cert-file',
      certs.ca,
      '--tls-auth-clients',
      'no',
      '--appendonly',
      'no',
      ...TEST_SERVER_ARGS,
      ...extra,
    ],
    dir,
  );
  return port;
}

/**
 * Starts `redis-server ...args` (a data node, or a sentinel: `<conf> --sentinel`) and waits
 * for `ready` in its log (a sentinel never logs "Ready to accept connections": it logs its
 * first `+monitor`).
 */
async function startTlsProcess(
  args: string[],
  dir: string,
  ready = 'Ready to accept connections',
): Promise<void> {
  const proc: ChildProcess = spawn('redis-server', args, {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  cleanups.push(async () => {
    if (proc.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      proc.once('exit', () => resolve());
      proc.kill('SIGKILL');
    });
  });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    proc.stdout?.on('data', (b: Buffer) => {
      out += b.toString();
      if (out.includes(ready)) resolve();
    });
    proc.once('error', reject);
    proc.once('exit', (code) =>
      reject(new Error(`redis-server ${args.join(' ')} (TLS) exited (${code}): ${out}`)),
    );
  });
}

describe('TLS', () => {
  it('syncs over rediss:// with our CA, checking the certificate against REDIS_TLS_SERVERNAME', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'crm-sync-tls-'));
    cleanups.push(() => removeDir(dir));
    const certs = makeCertificates(dir);
    const port = await startTlsRedis(dir, certs);
    const env = {
      REDIS_URL: `rediss://127.0.0.1:${port}`,
      REDIS_TLS_CA_FILE: certs.ca,
      REDIS_TLS_SERVERNAME: 'redis.test',
    };
    const h = await engine({ env });
    expect(h.config.redisUrl).toBe(`rediss://127.0.0.1:${port}`);
    await syncTwice(h);

    // The certificate is checked: not for this name, or not from a trusted CA, is refused.
    const { REDIS_TLS_SERVERNAME: _name, ...noName } = env;
    expect(await refusedWith({ ...noName })).toContain('(ERR_TLS_CERT_ALTNAME_INVALID)');
    const { REDIS_TLS_CA_FILE: _ca, ...noCa } = env;
    expect(await refusedWith(noCa)).toMatch(
      /\((UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_GET_ISSUER_CERT_LOCALLY)\)/,
    );
  });

  it('asks a sentinel reached over TLS for a TLS-only primary and syncs on it, both certificates checked', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'crm-sync-tls-sentinel-'));
    cleanups.push(() => removeDir(dir));
    const certs = makeCertificates(dir);
    const primaryDir = join(dir, 'primary');
    mkdirSync(primaryDir);
    const primaryPort = await startTlsRedis(primaryDir, certs);
    // A sentinel on TLS only, reaching the primary over TLS too (`tls-replication`).
    const sentinelDir = join(dir, 'sentinel');
    mkdirSync(sentinelDir);
    const sentinelPort = await freePort();
    const conf = join(sentinelDir, 'sentinel.conf');
    writeFileSync(
      conf,
      [
        'port 0',
        `tls-port ${sentinelPort}`,
        'bind 127.0.0.1',
        `dir ${sentinelDir}`,
        'protected-mode no',
        `tls-cert-file ${certs.cert}`,
        `tls-key-file ${certs.key}`,
        `tls-ca-cert-file ${certs.ca}`,
        'tls-auth-clients no',
        'tls-replication yes',
        `sentinel monitor tls-primary 127.0.0.1 ${primaryPort} 1`,
        '',
      ].join('\n'),
    );
    await startTlsProcess([conf, '--sentinel'], sentinelDir, '+monitor master tls-primary');
    const sentinel = (...args: string[]): string =>
      execFileSync(
        'redis-cli',
        ['--tls', '--cacert', certs.ca, '--sni', 'redis.test', '-p', String(sentinelPort), ...args],
        { encoding: 'utf8', timeout: 10_000 },
      );
    // The sentinel has reached the primary (over TLS) once it knows its role.
    for (
      let i = 0;
      !/role-reported\s+master/.test(sentinel('SENTINEL', 'MASTER', 'tls-primary'));
      i++
    ) {
      expect(i, 'the sentinel sees the primary').toBeLessThan(100);
      await new Promise((r) => setTimeout(r, 100));
    }

    const env = {
      // The scheme turns TLS on; the host is not used (the sentinels name the primary).
      REDIS_URL: 'rediss://not-used.invalid:1',
      REDIS_SENTINELS: `127.0.0.1:${sentinelPort}`,
      REDIS_SENTINEL_NAME: 'tls-primary',
      REDIS_TLS_CA_FILE: certs.ca,
      REDIS_TLS_SERVERNAME: 'redis.test',
    };
    const h = await engine({ env });
    expect(h.config.redis.kind).toBe('sentinel');
    await syncTwice(h);

    // Without the name, the sentinel's certificate (for redis.test, not 127.0.0.1) is refused;
    // without the CA, it is not trusted. Each refusal names the sentinel and the reason.
    const { REDIS_TLS_SERVERNAME: _name, ...noName } = env;
    expect(await refusedWith(noName)).toBe(
      `Redis at rediss://127.0.0.1:${sentinelPort}/0 (sentinel tls-primary) is not reachable (sentinel 127.0.0.1:${sentinelPort}: ERR_TLS_CERT_ALTNAME_INVALID)`,
    );
    const { REDIS_TLS_CA_FILE: _ca, ...noCa } = env;
    expect(await refusedWith(noCa)).toMatch(
      /\(sentinel 127\.0\.0\.1:\d+: (UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_GET_ISSUER_CERT_LOCALLY)\)$/,
    );
  });

  it("reaches a TLS-only cluster by its nodes' announced addresses, checked against REDIS_TLS_SERVERNAME", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'crm-sync-tls-cluster-'));
    cleanups.push(() => removeDir(dir));
    const certs = makeCertificates(dir);
    const ports: number[] = [];
    for (let i = 0; i < 3; i++) {
      const nodeDir = join(dir, `node-${i}`);
      mkdirSync(nodeDir);
      const bus = String(await freePort());
      ports.push(
        await startTlsRedis(nodeDir, certs, [
          '--cluster-enabled',
          'yes',
          '--cluster-port',
          bus,
          '--tls-cluster',
          'yes',
        ]),
      );
    }
    const cli = (...args: string[]): string =>
      execFileSync('redis-cli', ['--tls', '--cacert', certs.ca, '--insecure', ...args], {
        encoding: 'utf8',
        timeout: 30_000,
      });
    cli('--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-yes');
    for (const port of ports) {
      for (
        let i = 0;
        !cli('-p', String(port), 'CLUSTER', 'INFO').includes('cluster_state:ok');
        i++
      ) {
        expect(i, 'cluster_state:ok').toBeLessThan(100);
        await new Promise((r) => setTimeout(r, 100));
      }
    }

    const env = {
      // The scheme turns TLS on; the host is not used (the node list decides).
      REDIS_URL: 'rediss://not-used.invalid:1',
      REDIS_CLUSTER_NODES: `127.0.0.1:${ports[0]}`,
      REDIS_TLS_CA_FILE: certs.ca,
      REDIS_TLS_SERVERNAME: 'redis.test',
    };
    const h = await engine({ env });
    expect(h.config.redisUrl).toBe(`rediss://127.0.0.1:${ports[0]} (cluster)`);
    await syncTwice(h);

    // Without the name, the certificate (for redis.test, not 127.0.0.1) is refused.
    const { REDIS_TLS_SERVERNAME: _name, ...noName } = env;
    const err = await connectProducer(loadConfig(noName).redis).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RedisUnavailableError);
    expect((err as Error).message).toContain('(ERR_TLS_CERT_ALTNAME_INVALID)');
  });
});
