import { describe, expect, it } from 'vitest';
import { registerSecret } from '../../src/log.js';
import { StateStore } from '../../src/state/store.js';
import { useRedis } from '../harness/redis.js';

const { redis, prefix } = useRedis();

async function storeWithRun(runId: string): Promise<StateStore> {
  const store = new StateStore(redis, { prefix });
  await store.runs.create({
    id: runId,
    job: 'companies',
    entity: 'companies',
    mode: 'upsert',
    source: 'companies.csv',
    options: { full: false, force: false, trigger: 'manual' },
  });
  await store.runs.update(runId, { status: 'writing' });
  return store;
}

describe('WriteSteps: the pending marks of a create', () => {
  const keys = ['x:ACME-1', 'c:512'];

  it('a create that did not land releases its marks while its line is unsettled', async () => {
    const store = await storeWithRun('run-release');
    const claim = await store.writes.claim({
      runId: 'run-release',
      entity: 'companies',
      line: 2,
      createKeys: keys,
    });
    expect(claim).toBe('go');
    expect(await store.records.pending('companies', keys)).not.toBeNull();
    await store.writes.release('run-release', 'companies', 2, keys);
    expect(await store.records.pending('companies', keys)).toBeNull();
  });

  it('an attempt that lost its chunk cannot release marks another attempt settled as pending', async () => {
    const store = await storeWithRun('run-zombie');
    // Attempt A claims and sends; its lock lapses and attempt B, taking the
    // chunk over, finds the mark and settles the line as pending.
    expect(
      await store.writes.claim({
        runId: 'run-zombie',
        entity: 'companies',
        line: 2,
        createKeys: keys,
      }),
    ).toBe('go');
    expect(
      await store.writes.claim({
        runId: 'run-zombie',
        entity: 'companies',
        line: 2,
        createKeys: keys,
      }),
    ).toBe('pending');
    await store.writes.finish('run-zombie', 'companies', [
      { line: 2, outcome: 'pending', keys, clearPending: false },
    ]);
    // A's create is then refused (a 429): releasing, or settling it as not landed, keeps the
    // marks, which are what finalize lists to verify the line.
    await store.writes.release('run-zombie', 'companies', 2, keys);
    expect(await store.records.pending('companies', keys)).not.toBeNull();
    await store.writes.finish('run-zombie', 'companies', [
      { line: 2, outcome: 'failed', keys, clearPending: true },
    ]);
    expect(await store.records.pending('companies', keys)).not.toBeNull();
    // The line settled once: the late answer does not settle it again.
    expect((await store.runs.get('run-zombie'))!.counts.writesSettled).toBe(1);
  });

  it('a failure row is stored without the secrets its reason carried', async () => {
    const store = await storeWithRun('run-scrub');
    registerSecret('sk-write-steps-secret-0123456789');
    await store.writes.finish('run-scrub', 'companies', [
      {
        line: 3,
        outcome: 'failed',
        keys: ['x:B-2'],
        clearPending: false,
        failure: {
          line: 3,
          kind: 'failed',
          reason:
            'refused: key sk-write-steps-secret-0123456789 and Authorization: Bearer abcdefghijklmnop',
          identity: 'x:B-2',
        },
      },
    ]);
    const rows = JSON.stringify(await store.runs.listFailures('run-scrub'));
    expect(rows).toContain('refused');
    expect(rows).not.toContain('sk-write-steps-secret-0123456789');
    expect(rows).not.toContain('abcdefghijklmnop');
  });
});
