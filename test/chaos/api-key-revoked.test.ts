/**
 * Chaos: the API key revoked half-way. Two worker processes write with an
 * API account's token; once half the valid rows are written the test
 * regenerates that token. The run fails with a message naming the API key,
 * the 401s stay bounded by the writes in flight (no retry storm), and fresh
 * workers with the new key complete the sync with a new run.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { PlatformClient } from '../../src/platform/client.js';
import {
  expectSecondRunWritesNothing,
  expectSynced,
  requests,
  sandboxStats,
  useChaos,
} from '../harness/chaos.js';

const WORKERS = 2;
const CONCURRENCY = 8;

const chaos = useChaos();
let owner: PlatformClient | undefined;
afterEach(() => {
  owner?.close();
});

describe('chaos: a 401 half-way', () => {
  it('fails the run naming the API key without a retry storm; a new run with a valid key completes', async () => {
    const c = await chaos({
      sandbox: { latencyMs: 10, seed: 14 },
      env: { WRITE_CONCURRENCY: CONCURRENCY },
    });
    owner = new PlatformClient({ baseUrl: c.sandbox.url, apiKey: c.apiKey, timeoutMs: 5_000 });
    const robot = { first_name: 'crm-sync robot' };
    const token = (await owner.createApiAccount(robot)).token!;
    expect(token).toBeTruthy();
    for (let n = 0; n < WORKERS; n++) await c.startWorker(token);
    const runId = await c.enqueue();

    let fresh: string | undefined;
    const failed = await c.waitForRun(runId, {
      onPoll: async (run) => {
        if (fresh === undefined && run.counts.writesSettled >= c.expected.valid.size / 2) {
          fresh = (await owner!.createApiAccount({ ...robot, regenerate_token: true })).token!;
        }
      },
    });
    expect(fresh, 'the key was revoked before the run ended').toBeDefined();
    expect(fresh).not.toBe(token);
    expect(failed.status).toBe('failed');
    expect(failed.error).toMatch(/API key/);
    expect(failed.error).toMatch(/401/);
    expect(failed.error).not.toContain(token);

    const stats = await sandboxStats(c);
    const refused = stats.filter((e) => e.status === 401).reduce((n, e) => n + e.count, 0);
    expect(refused).toBeGreaterThan(0);
    // In flight when the key went, at most, plus those that read the run just before it failed.
    expect(refused).toBeLessThanOrEqual(2 * WORKERS * CONCURRENCY);
    const created = requests(stats, 'POST', '/companies', 200);
    expect(created).toBeLessThan(c.expected.valid.size);
    // Nothing refused was recorded as written: every failure is an invalid row (or a field left out).
    const failures = await c.store.runs.listFailures(runId, { limit: 100_000 });
    expect(failures.filter((f) => f.kind !== 'invalid' && f.kind !== 'warning')).toEqual([]);
    // The workers are still serving.
    expect(c.workers).toHaveLength(WORKERS);

    // New workers with the new key: the next run writes the rest.
    for (let n = 0; n < WORKERS; n++) await c.killWorker(0);
    for (let n = 0; n < WORKERS; n++) await c.startWorker(fresh);
    const run = await c.waitForRun(await c.enqueue(), { timeoutMs: 120_000 });
    await expectSynced(c, run);
    expect(run.counts.created + run.counts.adopted).toBe(c.expected.valid.size - created);
    await expectSecondRunWritesNothing(c);
  });
});
