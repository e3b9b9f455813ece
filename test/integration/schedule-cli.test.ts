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

function scheduler(): Proc {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/cli.ts', 'scheduler', '--jobs', dir],
    {
      cwd: root,
      env: {
        ...process.env,
        REDIS_URL: url,
        CRM_SYNC_PREFIX: prefix,
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
      const record = await new StateStore(redis, { prefix }).getRun(job!.id!);
      expect(record).toMatchObject({ job: 'fast', status: 'queued' });
      expect(record?.options).toMatchObject({ trigger: 'schedule' });
      expect(slots).toContain(record?.options.slot);
    } finally {
      await queue.close();
    }
  });
});
