/**
 * The retry policy's numbers live in config.ts once: the environment sets
 * them, the engine's defaults and the write queue take them from there, and
 * the write queue's backoff is the policy's.
 */
import type { Job } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, RETRY_DEFAULTS } from '../../src/config.js';
import { DEFAULT_ENGINE_SETTINGS } from '../../src/engine/context.js';
import { jitterOf, writeRetryDelay } from '../../src/platform/retry-policy.js';
import {
  QueueName,
  WRITE_BACKOFF,
  workerOptions,
  writeBackoff,
  writeJobOptions,
} from '../../src/queue/queues.js';

describe('retry settings', () => {
  it('has one default for each, and one rate-limit cap', () => {
    expect(RETRY_DEFAULTS).toEqual({
      requestRetries: 3,
      requestMinDelayMs: 200,
      requestMaxDelayMs: 5_000,
      writeAttempts: 8,
      writeBackoffMs: 1_000,
      rateLimitMaxRetries: 20,
      rateLimitWaitMs: 1_000,
      runRetries: 20,
      runBackoffMs: 1_000,
      runBackoffMaxMs: 60_000,
      page: { attempts: 5, minDelayMs: 1_000, maxDelayMs: 60_000 },
    });
    expect(loadConfig({}).retry).toEqual(RETRY_DEFAULTS);
    // The engine has no numbers of its own: a context built without config uses these.
    expect(DEFAULT_ENGINE_SETTINGS.retry).toBe(RETRY_DEFAULTS);
  });

  it('reads each from its variable', () => {
    const c = loadConfig({
      PLATFORM_RETRIES: '0',
      PLATFORM_RETRY_MIN_MS: '50',
      PLATFORM_RETRY_MAX_MS: '900',
      WRITE_ATTEMPTS: '3',
      WRITE_BACKOFF_MS: '250',
      RATE_LIMIT_MAX_RETRIES: '7',
      RUN_RETRIES: '4',
      RUN_BACKOFF_MS: '10',
      RUN_BACKOFF_MAX_MS: '20',
    });
    expect(c.retry).toEqual({
      ...RETRY_DEFAULTS,
      requestRetries: 0,
      requestMinDelayMs: 50,
      requestMaxDelayMs: 900,
      writeAttempts: 3,
      writeBackoffMs: 250,
      rateLimitMaxRetries: 7,
      runRetries: 4,
      runBackoffMs: 10,
      runBackoffMaxMs: 20,
    });
  });

  it('reports every bad one by name', () => {
    const err = (() => {
      try {
        loadConfig({ PLATFORM_RETRIES: '-1', RUN_RETRIES: 'many', WRITE_ATTEMPTS: '0' });
      } catch (e) {
        return e as ConfigError;
      }
    })();
    expect(err).toBeInstanceOf(ConfigError);
    const names = err!.problems.map((p) => p.split(':')[0]).sort();
    expect(names).toEqual(['PLATFORM_RETRIES', 'RUN_RETRIES', 'WRITE_ATTEMPTS']);
  });
});

describe('the write queue', () => {
  const s = { ...RETRY_DEFAULTS, writeAttempts: 5, writeBackoffMs: 40 };

  it("gives write jobs the settings' attempts and the policy's backoff", () => {
    expect(writeJobOptions(s)).toMatchObject({ attempts: 5, backoff: { type: WRITE_BACKOFF } });
    expect(writeJobOptions()).toMatchObject({ attempts: RETRY_DEFAULTS.writeAttempts });
  });

  it('waits what the policy decided for that job and attempt (BullMQ passes the one that failed)', async () => {
    const strategy = workerOptions(QueueName.writes, { connection: {}, retry: s }).settings
      ?.backoffStrategy;
    expect(strategy).toBeDefined();
    const job = { id: 'run-a-12-0' } as Job;
    for (const attempt of [1, 2, 4]) {
      const waited = await strategy!(attempt, WRITE_BACKOFF, new Error('x'), job);
      expect(waited).toBe(writeRetryDelay(attempt, s, jitterOf(`run-a-12-0:${attempt}`)));
      expect(waited).toBe(await writeBackoff(s)(attempt, WRITE_BACKOFF, undefined, job));
    }
    // The runs queue has no backoff: a run is not retried by BullMQ.
    expect(workerOptions(QueueName.runs, { connection: {} }).settings).toBeUndefined();
  });
});
