/**
 * The run service against the test Redis: a run's record exists from the
 * moment it is started, a second start attaches to it, a request that cannot
 * run enqueues nothing, a retry carries the original's options and source,
 * and a scheduled firing starts its run the same way.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { RunJobData } from '../../src/engine/payloads.js';
import {
  jobLoader,
  NoSuchRunError,
  retryRun,
  RunConflictError,
  RunNotEndedError,
  startRun,
  type RunDeps,
} from '../../src/engine/run-service.js';
import { SourceCredentialsError } from '../../src/engine/run-source.js';
import { JobError } from '../../src/jobs/definition.js';
import { createRunQueue, type TypedQueue } from '../../src/queue/queues.js';
import { startScheduler } from '../../src/schedule/scheduler.js';
import { StateStore } from '../../src/state/store.js';
import { useRedis } from '../harness/redis.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const EXPORT = join(ROOT, 'examples', 'hubspot-companies.csv');
const { redis, prefix } = useRedis();
const dir = mkdtempSync(join(tmpdir(), 'crm-sync-run-service-'));
writeFileSync(
  join(dir, 'companies.yaml'),
  `entity: companies\nsource:\n  path: ${JSON.stringify(EXPORT)}\nmapping: hubspot-companies\n`,
);
const loadJob = jobLoader({ jobsDir: dir, mappingsDir: join(ROOT, 'config', 'mappings') });
const queues: TypedQueue<RunJobData>[] = [];

afterAll(async () => {
  await Promise.all(queues.map((q) => q.close()));
  rmSync(dir, { recursive: true, force: true });
});

/** Deps on a prefix of their own, so each test sees only its runs. */
function deps(name: string): RunDeps & { queue: TypedQueue<RunJobData> } {
  const p = `${prefix}-${name}`;
  const queue = createRunQueue<RunJobData>({ connection: redis, prefix: p });
  queues.push(queue);
  return { store: new StateStore(redis, { prefix: p }), runQueue: queue, loadJob, queue };
}

describe('startRun', () => {
  it('creates the run record at once; a second start attaches to the run waiting', async () => {
    const d = deps('start');
    const first = await startRun(d, 'companies', { full: true, mode: 'create-only' });
    expect(first.attached).toBe(false);
    expect(await d.store.runs.get(first.runId)).toMatchObject({
      id: first.runId,
      job: 'companies',
      entity: 'companies',
      mode: 'create-only',
      status: 'queued',
      options: { full: true, force: false, trigger: 'cli' },
    });
    expect((await d.queue.getJob(first.runId))?.data).toEqual({
      job: 'companies',
      full: true,
      force: false,
      mode: 'create-only',
      trigger: 'cli',
    });

    const second = await startRun(d, 'companies', {
      full: true,
      mode: 'create-only',
      force: true,
    });
    expect(second).toEqual({ runId: first.runId, attached: true });
    // Another mode or `full` is not the run going: refused, naming it, never attached.
    for (const other of [{ mode: 'create-only' as const }, { full: true }, {}]) {
      const refused = startRun(d, 'companies', other);
      await expect(refused, JSON.stringify(other)).rejects.toBeInstanceOf(RunConflictError);
      await expect(startRun(d, 'companies', other)).rejects.toThrow(
        `run ${first.runId} of companies is still queued as a full backfill (create-only)`,
      );
    }
    expect(await d.store.runs.list({ job: 'companies' })).toHaveLength(1);
    expect(await d.queue.getJobCountByTypes('wait', 'active', 'delayed')).toBe(1);
  });

  it('does not attach to a run that has ended while its queue job still holds the slot', async () => {
    // A 401 fails a run from a write; its run job learns it only when it next wakes up.
    const d = deps('stale');
    const failed = await startRun(d, 'companies');
    await d.store.runs.update(failed.runId, {
      status: 'failed',
      error: 'the platform refused the API key',
    });
    const next = await startRun(d, 'companies');
    expect(next.attached).toBe(false);
    expect(next.runId).not.toBe(failed.runId);
    expect(await d.store.runs.get(next.runId)).toMatchObject({ status: 'queued' });
    // The new run holds the slot now: a third start attaches to it, not to the failed one.
    expect(await startRun(d, 'companies')).toEqual({ runId: next.runId, attached: true });
    // When the failed run's job finally finishes, the slot stays the new run's.
    const old = await d.queue.getJob(failed.runId);
    await old!.remove();
    expect(await startRun(d, 'companies')).toEqual({ runId: next.runId, attached: true });
  });

  it('refuses a job that does not load, or a source with a credential, and enqueues nothing', async () => {
    const d = deps('refused');
    await expect(startRun(d, 'missing')).rejects.toBeInstanceOf(JobError);
    await expect(
      startRun(d, 'companies', { source: 'https://exports.example/a.csv?access_token=abc' }),
    ).rejects.toBeInstanceOf(SourceCredentialsError);
    expect(await d.queue.getJobCountByTypes('wait', 'active', 'delayed')).toBe(0);
    expect(await d.store.runs.list()).toEqual([]);
  });
});

describe('retryRun', () => {
  it("starts a run with the ended run's options and source, naming it; refuses a run going or unknown", async () => {
    const d = deps('retry');
    const other = join(ROOT, 'examples', 'salesforce-accounts.csv');
    const first = await startRun(d, 'companies', { source: other, force: true });
    await expect(retryRun(d, first.runId)).rejects.toBeInstanceOf(RunNotEndedError);
    await expect(retryRun(d, 'run-nope')).rejects.toBeInstanceOf(NoSuchRunError);

    // The run ends (no worker here): its record says so and its queue job is gone.
    await d.store.runs.update(first.runId, { status: 'completed', finishedAt: Date.now() });
    await d.queue.obliterate({ force: true });

    const retry = await retryRun(d, first.runId);
    expect(retry).toMatchObject({ attached: false, original: { id: first.runId } });
    expect(retry.runId).not.toBe(first.runId);
    const record = await d.store.runs.get(retry.runId);
    expect(record).toMatchObject({ status: 'queued', source: other });
    expect(record?.options).toEqual({
      full: false,
      force: true,
      trigger: 'retry',
      retryOf: first.runId,
    });
    expect((await d.queue.getJob(retry.runId))?.data).toMatchObject({
      source: other,
      trigger: 'retry',
      retryOf: first.runId,
    });
  });
});

describe('a scheduled firing', () => {
  it('starts its run with its slot in the record; a job that no longer loads enqueues nothing', async () => {
    const d = deps('schedule');
    const scheduler = await startScheduler({
      jobs: [
        { name: 'companies', schedule: '0 2 * * *' },
        { name: 'gone', schedule: '0 2 * * *' },
      ],
      redis,
      prefix: `${prefix}-schedule`,
      enqueue: (job, slot) => startRun(d, job, { trigger: 'schedule', slot }),
    });
    try {
      const at = new Date('2026-03-02T02:00:00Z');
      const fired = await scheduler.fire('companies', at);
      expect(fired.outcome).toBe('enqueued');
      expect((await d.store.runs.get(fired.runId!))?.options).toEqual({
        full: false,
        force: false,
        trigger: 'schedule',
        slot: '2026-03-02T02:00:00.000Z',
      });
      expect(await scheduler.fire('gone', at)).toMatchObject({ outcome: 'failed' });
      expect(await d.store.runs.list({ job: 'gone' })).toEqual([]);
      expect(await d.queue.getJobCountByTypes('wait', 'active', 'delayed')).toBe(1);
    } finally {
      await scheduler.stop();
    }
  });
});
