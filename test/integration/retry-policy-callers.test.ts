/**
 * Each caller carries out what the retry policy decides, on a real Redis
 * store and a scripted platform client: the write processor (every kind of
 * decision, and the delay its queue's backoff strategy then waits), the
 * listing (in-process retries, 429 pauses up to the cap, a 401 at once), and
 * a run (a platform outage pauses it and it resumes; with RUN_RETRIES=0 the
 * same outage fails it).
 */
import type { Job } from 'bullmq';
import { describe, expect, it, vi } from 'vitest';
import { RETRY_DEFAULTS } from '../../src/config.js';
import { createEngineContext, type EngineContext } from '../../src/engine/context.js';
import { writeChunks, type WriteChunkData } from '../../src/engine/payloads.js';
import { refreshIndex } from '../../src/engine/reconcile.js';
import { processWriteChunk } from '../../src/engine/write-chunk.js';
import { WriteSlots } from '../../src/engine/write-slots.js';
import { silentLogger } from '../../src/log.js';
import type { PlatformClient } from '../../src/platform/client.js';
import { errorFromResponse, errorFromTransport } from '../../src/platform/error-factory.js';
import {
  decide,
  jitterOf,
  UNAUTHORIZED_MESSAGE,
  type Decision,
  type RetrySettings,
} from '../../src/platform/retry-policy.js';
import { QueueName, workerOptions, type TypedQueue } from '../../src/queue/queues.js';
import { StateStore } from '../../src/state/store.js';
import type { WriteAction } from '../../src/sync/action.js';
import {
  companyRows,
  countRequests,
  hubspotCells,
  hubspotJob,
  HUBSPOT_HEADER,
  useEngines,
} from '../harness/engine.js';
import { useRedis } from '../harness/redis.js';

const { redis, prefix } = useRedis();
const store = new StateStore(redis, { prefix });
// No waiting: the delays are the policy's (unit tests); here, who does what.
const S: RetrySettings = {
  ...RETRY_DEFAULTS,
  requestMinDelayMs: 0,
  requestMaxDelayMs: 0,
  rateLimitWaitMs: 5,
};

const post = { method: 'POST', route: '/companies' };
const put = { method: 'PUT', route: '/companies/{id}', path: '/companies/77' };
const status = (code: number, body = '', headers: Record<string, string> = {}) =>
  errorFromResponse({ ...post, status: code, headers, body });

interface Scripted {
  ctx: EngineContext;
  calls: () => number;
  /** The company names sent, in order. */
  sent: string[];
  rateLimit: ReturnType<typeof vi.fn>;
}

/**
 * A context whose client answers every call with `fail(body)` (a fresh error
 * each time), or creates the record when `fail` returns null.
 */
function scripted(
  fail: (body: { name?: unknown }) => unknown,
  settings: RetrySettings = S,
): Scripted {
  let calls = 0;
  const sent: string[] = [];
  const answer = async (...args: unknown[]): Promise<{ id: number }> => {
    calls++;
    const body = (typeof args[0] === 'number' ? args[1] : args[0]) as { name?: unknown };
    sent.push(String(body?.name));
    const err = fail(body);
    if (err !== null) throw err;
    return { id: 10_000 + calls };
  };
  const client = {
    createCompany: answer,
    createCustomer: answer,
    createMember: answer,
    updateCompany: answer,
    updateMember: answer,
    companiesPage: answer,
  } as unknown as PlatformClient;
  const rateLimit = vi.fn(async () => undefined);
  const ctx = createEngineContext({
    logger: silentLogger,
    store,
    client,
    writeQueue: { rateLimit } as unknown as TypedQueue<WriteChunkData>,
    writeSlots: new WriteSlots(4),
    loadJob: () => {
      throw new Error('not used');
    },
    sourceEnv: {},
    settings: { retry: settings, rateLimit: 1_000 },
  });
  return { ctx, calls: () => calls, sent, rateLimit };
}

let n = 0;
interface Attempts {
  attemptsMade?: number;
  attempts?: number;
}

/** A run with planned writes of `count` lines (2, 3, …) and their chunk job at the given attempt. */
async function chunkJob(
  kind: 'create' | 'update',
  job: Attempts = {},
  count = 1,
): Promise<{ job: Job; runId: string; keys: string[]; lines: number[] }> {
  n += 1;
  const runId = `run-policy-${n}`;
  await store.runs.create({
    id: runId,
    job: 'companies',
    entity: 'companies',
    mode: 'upsert',
    source: 'test.csv',
  });
  await store.runs.update(runId, { status: 'writing', phase: 'waiting' });
  await store.progress.setCounts(runId, { writesPlanned: count, writesSettled: 0 });
  const lines = Array.from({ length: count }, (_, i) => i + 2);
  const actions: WriteAction[] = lines.map((line) => {
    const keys = [`hubspot:${n * 100 + line}`];
    const base = { line, keys, hash: `h${n}-${line}`, body: { name: `Company ${n}-${line}` } };
    return kind === 'update' ? { kind, ...base, platformId: 77 } : { kind, ...base };
  });
  await store.plannedWrites.save(runId, actions);
  const [data] = writeChunks(
    { id: runId },
    { entity: 'companies', createVia: 'companies' },
    lines,
    0,
  );
  const made = job.attemptsMade ?? 0;
  const fake = {
    id: data!.opts.jobId,
    data: data!.data,
    queueQualifiedName: `${prefix}:${QueueName.writes}`,
    opts: { attempts: job.attempts ?? S.writeAttempts },
    attemptsMade: made,
    attemptsStarted: made + 1,
  } as unknown as Job;
  return { job: fake, runId, keys: actions[0]!.keys, lines };
}

/** What the processor asks, asked here the same way. */
function expected(err: unknown, kind: 'create' | 'update', job: Job, rateLimited = 0): Decision {
  const attempt = job.attemptsMade + 1;
  return decide(
    err,
    {
      operation: kind,
      durableAttempt: attempt,
      durableAttempts: job.opts.attempts!,
      rateLimited,
      ...(kind === 'update' && { platformId: 77 }),
      random: jitterOf(`${job.id}:${attempt}`),
    },
    S,
  );
}

describe('the write processor follows the policy', () => {
  it('a 429 goes again in-process (held by the client pacer), counted, with no queue pause; the create may go again', async () => {
    let calls = 0;
    const err = () => status(429, '', { 'retry-after': '3' });
    const { ctx, rateLimit } = scripted(() => (++calls <= 2 ? err() : null));
    const { job, runId, keys } = await chunkJob('create');
    expect(expected(err(), 'create', job)).toEqual({ action: 'pause-queue', delayMs: 3_000 });
    await expect(processWriteChunk(ctx, job)).resolves.toEqual({ created: 1 });
    expect(calls).toBe(3);
    expect(rateLimit).not.toHaveBeenCalled();
    expect(await store.records.pending('companies', keys)).toBeNull();
    expect((await store.runs.get(runId))!.counts).toMatchObject({ rateLimited: 2, created: 1 });
    expect(await store.records.lookup('companies', [{ keys }])).toEqual([
      expect.objectContaining({ platformId: 10_003 }),
    ]);
  });

  it('give-up after the 429 cap: the write is recorded failed with the reason', async () => {
    const capped = { ...S, rateLimitMaxRetries: 2 };
    const err = () => status(429, '', { 'retry-after': '1' });
    const { ctx, calls } = scripted(err, capped);
    const { job, runId, keys } = await chunkJob('create');
    await expect(processWriteChunk(ctx, job)).resolves.toEqual({ failed: 1 });
    expect(calls()).toBe(3);
    const [row] = await store.runs.listFailures(runId);
    expect(row?.reason).toMatch(/^rate limited by the platform 3 times in a row/);
    expect(await store.records.pending('companies', keys)).toBeNull();
    expect((await store.runs.get(runId))!.counts).toMatchObject({ rateLimited: 3, failed: 1 });
  });

  it('fail-run: a 401 fails the run naming the API key; the chunk sends nothing more', async () => {
    const err = () => errorFromResponse({ ...put, status: 401, headers: {}, body: '' });
    const { ctx, calls } = scripted(err);
    ctx.writeSlots = undefined;
    const { job, runId } = await chunkJob('update', {}, 3);
    expect(expected(err(), 'update', job).action).toBe('fail-run');
    await expect(processWriteChunk(ctx, job)).resolves.toEqual({ skipped: 1 });
    expect(calls()).toBe(1);
    expect(await store.runs.get(runId)).toMatchObject({
      status: 'failed',
      error: UNAUTHORIZED_MESSAGE,
    });
  });

  it('settle-unknown: a create answered 503 is sent once and left pending for the listing', async () => {
    const err = () => status(503);
    const { ctx, calls } = scripted(err);
    const { job, runId, keys } = await chunkJob('create');
    expect(expected(err(), 'create', job).action).toBe('settle-unknown');
    await expect(processWriteChunk(ctx, job)).resolves.toEqual({ pending: 1 });
    expect(calls()).toBe(1);
    expect(await store.records.pending('companies', keys)).toMatchObject({ runId });
  });

  it('retry-now, then retry-later: an update answered 503 is tried 1 + PLATFORM_RETRIES times, then goes back to BullMQ after the policy wait', async () => {
    const made: unknown[] = [];
    const err = () => {
      const e = errorFromResponse({ ...put, status: 503, headers: {}, body: '' });
      made.push(e);
      return e;
    };
    const { ctx, calls } = scripted(err);
    const { job } = await chunkJob('update', { attemptsMade: 2 });
    const thrown = await processWriteChunk(ctx, job).catch((e: unknown) => e);
    expect(calls()).toBe(S.requestRetries + 1);
    expect(thrown).toBe(made.at(-1));
    const d = expected(thrown, 'update', job);
    expect(d.action).toBe('retry-later');
    // The queue's backoff strategy waits exactly what the processor decided.
    const strategy = workerOptions(QueueName.writes, { connection: {}, retry: S }).settings!
      .backoffStrategy!;
    expect(await strategy(job.attemptsMade + 1, 'retry-policy', thrown as Error, job)).toBe(
      (d as { delayMs: number }).delayMs,
    );
  });

  it('retry-later keeps no pending mark when the create was refused before sending', async () => {
    const err = () =>
      errorFromTransport({ ...post, error: { code: 'ECONNREFUSED', message: 'refused' } });
    const { ctx, calls } = scripted(err);
    const { job, keys } = await chunkJob('create');
    expect(expected(err(), 'create', job).action).toBe('retry-later');
    await expect(processWriteChunk(ctx, job)).rejects.toMatchObject({ code: 'platform.network' });
    expect(calls()).toBe(S.requestRetries + 1);
    expect(await store.records.pending('companies', keys)).toBeNull();
  });

  it('retry-later keeps the pending mark when the error is not the platform answer', async () => {
    const { ctx } = scripted(() => new Error('Connection is closed.'));
    const { job, runId, keys } = await chunkJob('create');
    await expect(processWriteChunk(ctx, job)).rejects.toThrow('Connection is closed.');
    expect(await store.records.pending('companies', keys)).toMatchObject({ runId });
  });

  it('give-up on the last attempt: the write is recorded failed with the reason', async () => {
    const err = () => errorFromResponse({ ...put, status: 502, headers: {}, body: '' });
    const { ctx } = scripted(err);
    const { job, runId } = await chunkJob('update', { attemptsMade: S.writeAttempts - 1 });
    await expect(processWriteChunk(ctx, job)).resolves.toEqual({ failed: 1 });
    const d = expected(err(), 'update', job);
    expect(d.action).toBe('give-up');
    const [row] = await store.runs.listFailures(runId);
    expect(row).toMatchObject({ kind: 'failed', reason: (d as { reason: string }).reason });
    expect(row!.reason).toMatch(/^gave up after 8 attempts: PUT \/companies\/77 → 502/);
  });

  it('reject: a 400 is recorded rejected in the platform words, with its field', async () => {
    const err = () => status(400, '{"website":["Enter a valid URL."]}');
    const { ctx, calls } = scripted(err);
    const { job, runId, keys } = await chunkJob('create');
    await expect(processWriteChunk(ctx, job)).resolves.toEqual({ rejected: 1 });
    expect(calls()).toBe(1);
    const [row] = await store.runs.listFailures(runId);
    expect(row).toMatchObject({
      kind: 'rejected',
      field: 'website',
      reason: 'platform said 400: website: Enter a valid URL.',
    });
    expect(await store.records.pending('companies', keys)).toBeNull();
  });

  it('reject: an update of a record gone (404) names its platform id', async () => {
    const { ctx } = scripted(() =>
      errorFromResponse({ ...put, status: 404, headers: {}, body: '' }),
    );
    const { job, runId } = await chunkJob('update');
    await expect(processWriteChunk(ctx, job)).resolves.toEqual({ rejected: 1 });
    const [row] = await store.runs.listFailures(runId);
    expect(row?.reason).toBe('platform record 77 no longer exists (404)');
  });

  it('an update aborted by a shutdown is no rejection: it goes back to BullMQ', async () => {
    const err = () =>
      errorFromTransport({ ...put, error: { code: 'ERR_ABORTED' }, signal: AbortSignal.abort() });
    const { ctx } = scripted(err);
    const { job, runId } = await chunkJob('update');
    expect(expected(err(), 'update', job).action).toBe('retry-later');
    await expect(processWriteChunk(ctx, job)).rejects.toMatchObject({ code: 'platform.aborted' });
    expect(await store.runs.listFailures(runId)).toEqual([]);
  });
});

describe('a chunk of writes', () => {
  it('a transient fault of one write sends only that write again on the next attempt', async () => {
    let down = true;
    const { ctx, sent } = scripted((body) =>
      down && String(body.name).endsWith('-3')
        ? errorFromTransport({ ...post, error: { code: 'ECONNREFUSED', message: 'refused' } })
        : null,
    );
    const { job, runId } = await chunkJob('create', {}, 4);
    await expect(processWriteChunk(ctx, job)).rejects.toMatchObject({ code: 'platform.network' });
    const sentFirst = sent.length;
    down = false;
    const next = { ...job, attemptsMade: 1, attemptsStarted: 2 } as unknown as Job;
    await expect(processWriteChunk(ctx, next)).resolves.toEqual({ created: 1, skipped: 3 });
    expect(sent.slice(sentFirst)).toEqual([`Company ${n}-3`]);
    expect(new Set(sent).size).toBe(4);
    expect((await store.runs.get(runId))!.counts).toMatchObject({
      created: 4,
      writesSettled: 4,
    });
  });

  it('a chunk taken over skips settled lines and leaves a create claimed by the dead worker pending', async () => {
    const { ctx, sent } = scripted(() => null);
    const { job, runId, lines } = await chunkJob('create', {}, 3);
    const [settled, claimed] = [lines[0]!, lines[1]!];
    const planned = await store.plannedWrites.of(runId, [settled, claimed]);
    await store.writes.finish(runId, 'companies', [
      { line: settled, outcome: 'updated', keys: planned[0]!.keys, clearPending: false },
    ]);
    expect(
      await store.writes.claim({
        runId,
        entity: 'companies',
        line: claimed,
        createKeys: planned[1]!.keys,
      }),
    ).toBe('go');
    await expect(processWriteChunk(ctx, job)).resolves.toEqual({
      skipped: 1,
      pending: 1,
      created: 1,
    });
    expect(sent).toEqual([`Company ${n}-4`]);
    expect(await store.records.pending('companies', planned[1]!.keys)).toMatchObject({ runId });
  });

  it('a chunk stopped by a shutdown before its writes began is no completed chunk: it throws, its lines unsettled', async () => {
    const { ctx, calls } = scripted(() => null);
    const { job, runId, lines } = await chunkJob('create', {}, 3);
    const stop = new AbortController();
    stop.abort(new Error('shutting down'));
    await expect(processWriteChunk(ctx, job, stop.signal)).rejects.toThrow('shutting down');
    expect(calls()).toBe(0);
    expect(await store.progress.unsettledOf(runId, lines)).toEqual(lines);
  });

  it("sends no create once the chunk lock is another worker's", async () => {
    const { ctx, calls } = scripted(() => null);
    const { job, keys } = await chunkJob('create', {}, 2);
    await redis.set(`${prefix}:${QueueName.writes}:${job.id}:lock`, 'another-token');
    // Both writes were claimed at once; each claim finds the lock lost.
    await expect(processWriteChunk(ctx, job, undefined, 'my-token')).resolves.toEqual({
      skipped: 2,
    });
    expect(calls()).toBe(0);
    expect(await store.records.pending('companies', keys)).toBeNull();
  });
});

describe('the listing follows the policy', () => {
  const page = { results: [{ id: 1, name: 'Acme', crm_company_id: 5 }], next: null };

  /** A client whose companiesPage fails with `faults` in turn, then answers. */
  function listing(faults: (() => unknown)[], settings: RetrySettings = S) {
    const s = scripted(() => new Error('unused'), settings);
    let calls = 0;
    (s.ctx.client as unknown as { companiesPage: () => Promise<unknown> }).companiesPage =
      async () => {
        const f = faults[calls++];
        if (f) throw f();
        return page;
      };
    return { ...s, calls: () => calls };
  }
  const r429 = () =>
    errorFromResponse({ method: 'GET', route: '/companies', status: 429, headers: {}, body: '' });
  const r503 = () =>
    errorFromResponse({ method: 'GET', route: '/companies', status: 503, headers: {}, body: '' });
  const r401 = () =>
    errorFromResponse({ method: 'GET', route: '/companies', status: 401, headers: {}, body: '' });

  it('retries transient faults in-process and waits out 429s, without pausing the write queue', async () => {
    const { ctx, calls, rateLimit } = listing([r503, r503, r429, r503, r429]);
    const info = await refreshIndex(ctx, 'companies');
    expect(info.count).toBe(1);
    expect(calls()).toBe(6);
    // The client's pacer holds every request after a 429; the queue is not paused as well.
    expect(rateLimit).not.toHaveBeenCalled();
  });

  it('hands a 429 past the cap, or a fault past the in-process retries, to its run', async () => {
    const capped = { ...S, rateLimitMaxRetries: 2 };
    const limited = listing([r429, r429, r429, r429], capped);
    await expect(refreshIndex(limited.ctx, 'companies')).rejects.toMatchObject({
      code: 'platform.rate-limited',
    });
    expect(limited.calls()).toBe(3);

    const down = listing(Array(10).fill(r503));
    await expect(refreshIndex(down.ctx, 'companies')).rejects.toMatchObject({ statusCode: 503 });
    expect(down.calls()).toBe(S.requestRetries + 1);
  });

  it('does not retry a 401', async () => {
    const { ctx, calls } = listing([r401, r401]);
    await expect(refreshIndex(ctx, 'companies')).rejects.toMatchObject({ statusCode: 401 });
    expect(calls()).toBe(1);
  });
});

const engine = useEngines();

describe('a run follows the policy', () => {
  /** Every platform request answered 503 until the first one is seen; then none. */
  async function outage(env: Record<string, string>) {
    const h = await engine({
      sandbox: { faultRate: 1 },
      env: { PLATFORM_RETRIES: '0', RUN_BACKOFF_MS: '20', RUN_BACKOFF_MAX_MS: '50', ...env },
    });
    const rows = companyRows(5);
    const path = h.writeCsv('companies.csv', HUBSPOT_HEADER, rows.map(hubspotCells));
    h.writeJob('companies', hubspotJob(path));
    let healed = false;
    const run = await h.runJob('companies', {
      onPoll: async () => {
        if (healed) return;
        if (countRequests(await h.stats(), 'GET', '/companies', 503) > 0) {
          healed = true;
          h.sandbox.setFaults({ faultRate: 0 });
        }
      },
    });
    return { h, run };
  }

  it('pauses on a listing outage and resumes from its checkpoint', async () => {
    const { h, run } = await outage({});
    expect(run.error).toBeUndefined();
    expect(run.status).toBe('completed');
    expect(run.counts).toMatchObject({ read: 5, created: 5 });
    expect(countRequests(await h.stats(), 'GET', '/companies', 503)).toBeGreaterThanOrEqual(1);
  });

  it('fails on the same outage when RUN_RETRIES is 0, with the platform error', async () => {
    const { run } = await outage({ RUN_RETRIES: '0' });
    expect(run.status).toBe('failed');
    expect(run.error).toMatch(/GET \/companies.* → 503/);
  });
});
