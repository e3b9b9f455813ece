/**
 * `crm-sync migrate` and the refusals that name it, as users run them (one
 * process per command), on the state the previous release left
 * (test/fixtures/layout-1/) loaded under the test's prefix.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, requireBuild, runCli } from '../harness/cli.js';
import { loadLayout1 } from '../harness/layout-fixture.js';
import { useRedis } from '../harness/redis.js';

const { redis, prefix, url } = useRedis();
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  requireBuild();
  await loadLayout1(redis, prefix);
  env = cliEnv({
    REDIS_URL: url,
    CRM_SYNC_PREFIX: prefix,
    // Never reached: the worker stops at the layout check, before any request.
    PLATFORM_BASE_URL: 'http://127.0.0.1:9',
    PLATFORM_API_KEY: 'e2e-migrate-key-0123456789',
    OPS_PORT: 0,
    LOG_LEVEL: 'silent',
  });
});

describe('crm-sync migrate', () => {
  it('the worker and the scheduler refuse layout 1 naming the command; migrate migrates, then has nothing to do', async () => {
    const worker = await runCli(['worker'], env, 60_000);
    expect(worker.code).toBe(1);
    expect(worker.stderr).toContain(
      `crm-sync: state under ${prefix} has layout 1; this crm-sync needs layout 2: ` +
        'stop every crm-sync worker of the older release, then run `crm-sync migrate`',
    );

    const scheduler = await runCli(['scheduler'], env, 60_000);
    expect(scheduler.code).toBe(1);
    expect(scheduler.stderr).toContain('this crm-sync needs layout 2');

    const first = await runCli(['migrate'], env);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toBe(
      `state under ${prefix} migrated from layout 1 to 2\n` +
        '  to 2: record states name the job that wrote them (records 100, rewritten 100, writerUnknown 0)\n',
    );
    const again = await runCli(['migrate', '--json'], env);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toEqual({
      outcome: 'current',
      from: 2,
      to: 2,
      steps: [],
      abandonedRuns: [],
    });
    const plain = await runCli(['migrate'], env);
    expect(plain.stdout).toBe(`state under ${prefix} is at layout 2: nothing to do\n`);
  });
});
