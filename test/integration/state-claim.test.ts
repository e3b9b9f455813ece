import { describe, expect, it } from 'vitest';
import { StateStore } from '../../src/state/store.js';
import { useRedis } from '../harness/redis.js';

const { redis, prefix } = useRedis();

describe('StateStore.claimCreate', () => {
  it('claims once: a second claim sees the pending create, a recorded record refuses any claim', async () => {
    const store = new StateStore(redis, { prefix });
    const keys = ['x:ACME-1', 'c:512'];
    expect(await store.claimCreate('companies', keys, 'run-a', 1)).toBe('claimed');
    expect(await store.pending('companies', keys)).toEqual({ runId: 'run-a', since: 1 });
    // Another worker holding the same job, or a row sharing one of the keys.
    expect(await store.claimCreate('companies', keys, 'run-a', 2)).toBe('pending');
    expect(await store.claimCreate('companies', ['c:512'], 'run-b', 3)).toBe('pending');

    // The create is confirmed: the keys map to the record and the marks are gone.
    await store.commit('companies', [
      { keys, platformId: 41, hash: 'h1', runId: 'run-a', job: 'j' },
    ]);
    expect(await store.pending('companies', keys)).toBeNull();
    expect(await store.claimCreate('companies', keys, 'run-a', 4)).toBe('exists');
    expect(await store.claimCreate('companies', ['x:OTHER', 'c:512'], 'run-c', 5)).toBe('exists');
    // A refused claim marks nothing.
    expect(await store.pending('companies', ['x:OTHER'])).toBeNull();
  });
});
