import type { TestProject } from 'vitest/node';
import { startRedisServer, removeDir } from './redis-server.js';

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string;
  }
}

/**
 * Gives every integration and e2e test file a real Redis: a redis-server
 * spawned on a free port for this test run. A Redis the machine already runs
 * (REDIS_URL, 127.0.0.1:6379) is never used: only CRM_SYNC_TEST_REDIS_URL,
 * set on purpose, names another (tests then touch only keys under their own
 * random prefix).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const given = process.env.CRM_SYNC_TEST_REDIS_URL;
  if (given) {
    project.provide('redisUrl', given);
    return async () => {};
  }
  const server = await startRedisServer();
  project.provide('redisUrl', server.url);
  return async () => {
    await server.stop();
    removeDir(server.dir);
  };
}
