import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { useRedis } from '../harness/redis.js';
import { createRunQueue } from '../../src/queue/queues.js';
import { StateStore } from '../../src/state/store.js';

const { url, prefix, redis } = useRedis();
const root = resolve(import.meta.dirname, '../..');
const dir = mkdtempSync(join(tmpdir(), 'crm-sync-sched-'));
writeFileSync(
  join(dir, 'fast.yaml'),
  [
    'entity: companies',
    'source:',
    `  path: ${join(root, 'examples/hubspot-companies.csv')}`,
    'mapping: hubspot-companies',
    "schedule: '* * * * * *'",
    '',
  ].join('\n'),
);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Proc {
  child: ChildProcess;
  lines: Record<string, unknown>[];
  exited: Promise<number | null>;
}

function scheduler(p = prefix): Proc {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/cli.ts', 'scheduler', '--jobs', dir],
    {
      cwd: root,
      env: {
        ...process.env,
        REDIS_URL: url,
        CRM_SYNC_PREFIX: p,
        LOG_LEVEL: 'debug',
        OPS_PORT: '0',
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  const lines: Record<string, unknown>[] = [];
  let buf = '';
  child.stderr!.on('data', (b: Buffer) => {
    buf += b.toString();
    const parts = buf.split('\n');
    buf = parts.pop()!;
    for (const l of parts) if (l.startsWith('{')) lines.push(JSON.parse(l));
  });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return { child, lines, exited };
}

/** Runs `crm-sync ARGS --jobs DIR` to its end. */
function cli(
  p: string,
  ...args: string[]
): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args, '--jobs', dir], {
    cwd: root,
    env: { ...process.env, REDIS_URL: url, CRM_SYNC_PREFIX: p, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (err += b.toString()));
  return new Promise((r) => child.once('exit', (code) => r({ code, out, err })));
}

const waitFor = async (cond: () => boolean, ms: number): Promise<void> => {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
};

describe('crm-sync scheduler (two processes)', () => {
  it('enqueues each slot of a fast cron once across replicas, then exits 0 on SIGTERM', async () => {
    const procs = [scheduler(), scheduler()];
    const running = (p: Proc) => p.lines.some((l) => l.msg === 'ops server listening');
    await waitFor(() => procs.every(running), 30_000);
    // Each serves the ops routes; ready means its Redis answers.
    for (const p of procs) {
      const ops = p.lines.find((l) => l.msg === 'ops server listening');
      expect(ops?.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect((await fetch(`${ops!.url as string}/readyz`)).status).toBe(200);
    }
    // Both replicas running together for a few slots.
    await new Promise((r) => setTimeout(r, 3_300));
    for (const p of procs) p.child.kill('SIGTERM');
    const codes = await Promise.all(procs.map((p) => p.exited));
    expect(codes).toEqual([0, 0]);

    const decided = procs.flatMap((p) =>
      p.lines.filter(
        (l) =>
          l.msg === 'scheduled run enqueued' ||
          String(l.msg).startsWith('previous run still active'),
      ),
    );
    const stoodDown = procs.flatMap((p) =>
      p.lines.filter((l) => l.msg === 'slot claimed by another scheduler'),
    );
    const slots = decided.map((l) => l.slot as string);
    expect(slots.length).toBeGreaterThanOrEqual(2);
    expect(new Set(slots).size).toBe(slots.length);
    // The other replica saw the same slots and stood down.
    expect(stoodDown.length).toBeGreaterThanOrEqual(1);
    for (const l of stoodDown) expect(slots).toContain(l.slot);

    // Only one run exists: every later slot attached to the first.
    const queue = createRunQueue({ connection: redis, prefix });
    try {
      expect(await queue.getJobCountByTypes('wait', 'active')).toBe(1);
      const [job] = await queue.getJobs(['wait']);
      expect(job?.data).toMatchObject({ job: 'fast', trigger: 'schedule' });
      // Its record exists before any worker takes it (as for `crm-sync run`), naming its slot.
      const record = await new StateStore(redis, { prefix }).runs.get(job!.id!);
      expect(record).toMatchObject({ job: 'fast', status: 'queued' });
      expect(record?.options).toMatchObject({ trigger: 'schedule' });
      expect(slots).toContain(record?.options.slot);
    } finally {
      await queue.close();
    }
  });

  it('crm-sync pause stops the slots of a job; crm-sync resume starts them again', async () => {
    const p = `${prefix}-pause`;
    const paused = await cli(p, 'pause', 'fast', '--json');
    expect(paused.code, paused.err).toBe(0);
    const state = JSON.parse(paused.out) as { paused: { by: string; since: string } };
    expect(state).toMatchObject({ name: 'fast', schedule: '* * * * * *', timezone: 'UTC' });
    expect(state.paused.by).toMatch(/^cli/);
    expect(paused.err).toContain(`schedule of fast paused (by ${state.paused.by}`);
    expect(await redis.hgetall(`${p}:schedule:paused:fast`)).toEqual(state.paused);

    const proc = scheduler(p);
    const skipped = () => proc.lines.filter((l) => l.msg === 'job paused; slot skipped');
    const enqueued = () => proc.lines.filter((l) => l.msg === 'scheduled run enqueued');
    try {
      await waitFor(() => skipped().length >= 2, 30_000);
      expect(enqueued()).toEqual([]);
      const queue = createRunQueue({ connection: redis, prefix: p });
      try {
        expect(await queue.getJobCountByTypes('wait', 'active')).toBe(0);
      } finally {
        await queue.close();
      }

      const resumed = await cli(p, 'resume', 'fast');
      expect(resumed.code, resumed.err).toBe(0);
      expect(resumed.err).toMatch(/^schedule of fast resumed; next slot /);
      await waitFor(() => enqueued().length >= 1, 10_000);
      expect(await redis.exists(`${p}:schedule:paused:fast`)).toBe(0);
    } finally {
      proc.child.kill('SIGTERM');
      expect(await proc.exited).toBe(0);
    }
    const again = await cli(p, 'resume', 'fast');
    expect(again.err).toBe('schedule of fast was not paused\n');
    const unknown = await cli(p, 'pause', 'nope');
    expect(unknown.code).toBe(3);
    expect(unknown.err).toMatch(/no job "nope"/);
  });
});
