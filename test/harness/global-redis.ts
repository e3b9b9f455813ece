import type { TestProject } from 'vitest/node';
import { startRedisServer, removeDir } from './redis-server.js';

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string;
  }
}

/**
 * Gives every integration and e2e test file a real Redis: REDIS_URL when the
 * caller set one (tests then only touch keys under their own random prefix),
 * otherwise a redis-server spawned on a free port for this test run.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const given = process.env.REDIS_URL;
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
