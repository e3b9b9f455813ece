/**
 * The CLI's exit codes, one-line errors and help, one process per command as
 * users run it, against the test Redis: usage 2, configuration 3, Redis
 * unreachable 4, an unknown run 1; `--help` on the root and on every command.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, killAll, requireBuild, runCli, tempDir } from '../harness/cli.js';
import { useRedis } from '../harness/redis.js';

const { prefix, url: redisUrl } = useRedis();
const files = tempDir('e2e-help');
let env: NodeJS.ProcessEnv;

beforeAll(() => {
  requireBuild();
  env = cliEnv({
    REDIS_URL: redisUrl,
    CRM_SYNC_PREFIX: prefix,
    CRM_SYNC_JOBS_DIR: files.dir,
    // No platform is asked: nothing here writes or lists.
    PLATFORM_BASE_URL: 'http://127.0.0.1:9',
    PLATFORM_API_KEY: 'e2e-help-key-0123456789',
    OPS_PORT: 0,
    LOG_LEVEL: 'warn',
  });
});

afterAll(async () => {
  await killAll();
  files.remove();
});

describe('exit codes, errors and help', () => {
  it('usage 2, configuration 3, Redis unreachable 4; errors are one line, --verbose adds the stack', async () => {
    const usage = await runCli(['runs', '--bogus'], env);
    expect(usage.code).toBe(2);
    const config = await runCli(['runs'], { ...env, LOG_LEVEL: 'loud' });
    expect(config.code).toBe(3);
    expect(config.stderr).toContain('LOG_LEVEL');
    const noJob = await runCli(['run', 'missing'], env);
    expect(noJob.code).toBe(3);
    const down = await runCli(['runs'], { ...env, REDIS_URL: 'redis://127.0.0.1:1' });
    expect(down.code).toBe(4);
    expect(down.stderr.trim().split('\n')).toEqual([
      'crm-sync: Redis at redis://127.0.0.1:1 is not reachable (ECONNREFUSED)',
    ]);
    const verbose = await runCli(['runs', '--verbose'], {
      ...env,
      REDIS_URL: 'redis://127.0.0.1:1',
    });
    expect(verbose.code).toBe(4);
    expect(verbose.stderr).toMatch(/\n\s+at /);
    const none = await runCli(['show', 'run-nope', '--json'], env);
    expect(none.code).toBe(1);
  });

  it('--help works on every command; the root lists the exit codes', async () => {
    const root = await runCli(['--help'], env);
    expect(root.code).toBe(0);
    expect(root.stdout).toMatch(/Exit codes:[\s\S]*4\s+Redis unreachable[\s\S]*5\s+a run stopped/);
    const listed = root.stdout.slice(root.stdout.indexOf('Commands:'));
    const commands = [...listed.matchAll(/^ {2}([a-z-]+)/gm)].map((m) => m[1]!);
    expect(commands).toEqual(
      expect.arrayContaining([
        'run',
        'plan',
        'show',
        'runs',
        'failures',
        'retry',
        'validate',
        'worker',
        'start',
        'scheduler',
        'pause',
        'resume',
        'sandbox',
        'api-account',
      ]),
    );
    for (const cmd of [...commands.filter((c) => c !== 'help'), 'api-account create']) {
      const r = await runCli([...cmd.split(' '), '--help'], env);
      expect(r.code, cmd).toBe(0);
      expect(r.stdout, cmd).toMatch(/^Usage: crm-sync /);
    }
  });
});
