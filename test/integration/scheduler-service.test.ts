import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { useRedis } from '../harness/redis.js';
import { loadConfig } from '../../src/config.js';
import { jobLoader } from '../../src/engine/run-service.js';
import type { JobLoader } from '../../src/jobs/job-loader.js';
import { silentLogger } from '../../src/log.js';
import { createShutdown } from '../../src/ops/shutdown.js';
import { startSchedulerService } from '../../src/schedule/scheduler-service.js';

const { url, prefix } = useRedis();
const root = resolve(import.meta.dirname, '../..');
const dir = mkdtempSync(join(tmpdir(), 'crm-sync-sched-service-'));
writeFileSync(
  join(dir, 'nightly.yaml'),
  [
    'entity: companies',
    'source:',
    `  path: ${join(root, 'examples/hubspot-companies.csv')}`,
    'mapping: hubspot-companies',
    "schedule: '0 3 * * *'",
    '',
  ].join('\n'),
);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('scheduler service', () => {
  it("reads jobs through the loader it is given (crm-sync start: the workers'), at start and at a firing", async () => {
    const config = loadConfig({
      REDIS_URL: url,
      CRM_SYNC_PREFIX: prefix,
      CRM_SYNC_JOBS_DIR: dir,
      CRM_SYNC_MAPPINGS_DIR: join(root, 'config/mappings'),
    });
    const asked: string[] = [];
    const workers = jobLoader(config, dir);
    const loadJob: JobLoader = (name) => {
      asked.push(name);
      return workers(name);
    };
    const shutdown = createShutdown(silentLogger, { deadlineMs: 2_000 });
    try {
      const { scheduler } = await startSchedulerService({
        config,
        logger: silentLogger,
        shutdown,
        loadJob,
      });
      expect(scheduler.scheduled).toEqual(['nightly']);
      expect(asked).toEqual(['nightly']);
      const fired = await scheduler.fire('nightly', new Date('2026-11-29T03:00:00Z'));
      expect(fired).toMatchObject({ job: 'nightly', outcome: 'enqueued' });
      expect(asked).toEqual(['nightly', 'nightly']);
    } finally {
      await shutdown.shutdown('test');
    }
  });
});
