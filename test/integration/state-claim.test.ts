import { describe, expect, it } from 'vitest';
import { StateStore } from '../../src/state/store.js';
import { useRedis } from '../harness/redis.js';

const { redis, prefix } = useRedis();

describe('claiming a create before its write (store.writes.claim)', () => {
  it('claims once: a second claim sees the pending create, a recorded record refuses any claim', async () => {
    const store = new StateStore(redis, { prefix, now: () => 1_000 });
    for (const id of ['run-a', 'run-b', 'run-c']) {
      await store.runs.create({
        id,
        job: 'j',
        entity: 'companies',
        mode: 'upsert',
        source: 'a.csv',
      });
      await store.runs.update(id, { status: 'writing', phase: 'waiting' });
    }
    const claim = (runId: string, line: number, createKeys: string[]) =>
      store.writes.claim({ runId, entity: 'companies', line, createKeys });
    const keys = ['x:ACME-1', 'c:512'];
    expect(await claim('run-a', 2, keys)).toBe('go');
    expect(await store.records.pending('companies', keys)).toEqual({
      runId: 'run-a',
      since: 1_000,
    });
    expect(await store.records.listPending('companies')).toHaveLength(2);
    // Another worker holding the same chunk, or a row sharing one of the keys.
    expect(await claim('run-a', 2, keys)).toBe('pending');
    expect(await claim('run-b', 7, ['c:512'])).toBe('pending');

    // The create is confirmed: the keys map to the record and the marks are gone.
    await store.records.commit('companies', [
      { keys, platformId: 41, hash: 'h1', runId: 'run-a', job: 'j' },
    ]);
    expect(await store.records.pending('companies', keys)).toBeNull();
    expect(await claim('run-a', 3, keys)).toBe('exists');
    expect(await claim('run-c', 4, ['x:OTHER', 'c:512'])).toBe('exists');
    // A refused claim marks nothing.
    expect(await store.records.pending('companies', ['x:OTHER'])).toBeNull();
    // An update claims no key.
    expect(await store.writes.claim({ runId: 'run-c', entity: 'companies', line: 5 })).toBe('go');
    expect(await store.records.listPending('companies')).toEqual([]);
  });

  it('refuses every write of a run that has ended or is gone, marking nothing', async () => {
    const store = new StateStore(redis, { prefix: `${prefix}:ended` });
    await store.runs.create({
      id: 'run-done',
      job: 'j',
      entity: 'companies',
      mode: 'upsert',
      source: 'a.csv',
    });
    await store.runs.update('run-done', { status: 'failed' });
    for (const runId of ['run-done', 'run-unknown']) {
      expect(
        await store.writes.claim({ runId, entity: 'companies', line: 2, createKeys: ['x:A'] }),
      ).toBe('ended');
    }
    expect(await store.records.listPending('companies')).toEqual([]);
  });
});
