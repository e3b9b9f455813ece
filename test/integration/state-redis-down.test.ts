import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { StateError } from '../../src/state/errors.js';
import { StateStore } from '../../src/state/store.js';
import { useRedis } from '../harness/redis.js';

const { url, prefix } = useRedis();

/** A store whose connection is closed: every call fails as Redis would when it is down. */
async function closedStore(): Promise<StateStore> {
  const redis = new Redis(url, {
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    lazyConnect: true,
  });
  redis.on('error', () => {});
  await redis.connect();
  await redis.quit();
  return new StateStore(redis, { prefix });
}

async function failure(call: Promise<unknown>): Promise<StateError> {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StateError);
  return err as StateError;
}

describe('StateStore with Redis down', () => {
  it('every kind of call fails as a retryable state.redis error saying what it was doing', async () => {
    const store = await closedStore();
    const cases: [() => Promise<unknown>, string][] = [
      [() => store.hasState(), 'checking for state'],
      [() => store.runs.get('r1'), 'reading a run'],
      [() => store.runs.countFailures('r1'), 'counting failed rows'],
      [() => store.index.info('companies'), 'reading the platform index'],
      [() => store.plannedWrites.count('r1'), 'counting planned writes'],
    ];
    for (const [call, what] of cases) {
      const err = await failure(call());
      expect(err.code).toBe('state.redis');
      expect(err.retryable).toBe(true);
      expect(err.message).toContain(`Redis failed while ${what}: `);
      expect(err.cause).toBeInstanceOf(Error);
    }
  });
});
