/**
 * The API key never leaves the process: not in any line of stdout or stderr
 * of a whole run at LOG_LEVEL=debug (each platform request is logged), not in
 * any Redis value under the prefix (run records, failures, queue jobs and
 * their events). The key is long and distinctive, so a match cannot be luck.
 */
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cliEnv,
  companiesCsv,
  companiesJob,
  killAll,
  requireBuild,
  runCli,
  startSandboxProcess,
  tempDir,
} from '../harness/cli.js';
import { keysMatching, useRedis } from '../harness/redis.js';

const { redis, prefix, url: redisUrl } = useRedis();
const apiKey = 'sk_live_CRMSYNC_e2e_Zq8vN3xR7tLm2Kp9Wd4Hs6Jf1Gb5Yc0A';
const files = tempDir('e2e-secrets');

beforeAll(() => {
  requireBuild();
  const csv = files.write(
    'secret.csv',
    companiesCsv(60, [
      // A rejected row and an invalid one, so failure rows are stored too.
      { 'Record ID': '7000', 'Company name': 'N'.repeat(300) },
      { 'Record ID': 'x', 'Company name': 'Bad id' },
    ]),
  );
  files.write('secret.yaml', companiesJob(csv));
});

afterAll(async () => {
  await killAll();
  files.remove();
});

/** Every value stored under `prefix`, whatever the key's type. */
async function valuesUnder(redis: Redis, prefix: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const key of await keysMatching(redis, `${prefix}*`)) {
    const type = await redis.type(key);
    let parts: unknown;
    if (type === 'string') parts = await redis.getBuffer(key);
    else if (type === 'hash') parts = await redis.hgetallBuffer(key);
    else if (type === 'list') parts = await redis.lrangeBuffer(key, 0, -1);
    else if (type === 'set') parts = await redis.smembersBuffer(key);
    else if (type === 'zset') parts = await redis.zrangeBuffer(key, '0', '-1');
    else if (type === 'stream') parts = await redis.xrange(key, '-', '+');
    out.set(
      `${key} (${type})`,
      JSON.stringify(parts, (_k, v: unknown) => toText(v)),
    );
  }
  return out;
}

function toText(v: unknown): unknown {
  if (Buffer.isBuffer(v)) return v.toString('latin1');
  if (v && typeof v === 'object' && (v as { type?: unknown }).type === 'Buffer') {
    return Buffer.from((v as { data: number[] }).data).toString('latin1');
  }
  return v;
}

describe('the API key', () => {
  it('appears in no output line of a whole run at debug level, nor in any Redis value', async () => {
    const sandbox = await startSandboxProcess(apiKey);
    const env = cliEnv({
      REDIS_URL: redisUrl,
      CRM_SYNC_PREFIX: prefix,
      CRM_SYNC_JOBS_DIR: files.dir,
      PLATFORM_BASE_URL: sandbox.url,
      PLATFORM_API_KEY: apiKey,
      PLATFORM_RATE_LIMIT: 200,
      OPS_PORT: 0,
      LOG_LEVEL: 'debug',
    });
    const r = await runCli(['run', 'secret', '--with-worker', '--wait', '--json'], env);
    expect(r.code, r.stderr.slice(-2000)).toBe(0);
    const summary = JSON.parse(r.stdout) as {
      runId: string;
      status: string;
      counts: Record<string, number>;
    };
    expect(summary.status).toBe('completed');
    expect(summary.counts).toMatchObject({ created: 60, rejected: 1, invalid: 1 });

    const lines = [...r.stdout.split('\n'), ...r.stderr.split('\n')];
    // The debug log really ran: one line per platform request at least.
    expect(lines.filter((l) => l.includes('"msg":"platform request"')).length).toBeGreaterThan(60);
    // Also the key's halves: a key cut across a line or JSON-escaped would show one.
    for (const needle of [apiKey, apiKey.slice(0, 24), apiKey.slice(24)]) {
      expect(lines.filter((l) => l.includes(needle))).toEqual([]);
    }

    // Redacted failure output as users read it.
    const failures = await runCli(['failures', summary.runId], env);
    expect(failures.stdout + failures.stderr).not.toContain(apiKey);

    const values = await valuesUnder(redis, prefix);
    expect(values.size).toBeGreaterThan(5);
    const leaks = [...values].filter(
      ([, v]) => v.includes(apiKey) || v.includes(apiKey.slice(8, 32)),
    );
    expect(leaks.map(([k]) => k)).toEqual([]);
  });
});
