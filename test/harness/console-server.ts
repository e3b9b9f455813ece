/**
 * The ops server (console and /api) on port 0 over an engine harness: the
 * same store, runs queue, jobs folder and platform as its workers, as
 * `crm-sync start` wires them.
 */
import type { Queue } from 'bullmq';
import { jobLoader } from '../../src/engine/run-service.js';
import { startOpsServer, type OpsServer } from '../../src/ops/server.js';
import type { EngineHarness } from './engine.js';

export type ConsoleServer = OpsServer;

export async function startConsoleServer(
  h: EngineHarness,
  opts: { token?: string; queues?: readonly Queue[] } = {},
): Promise<ConsoleServer> {
  const client = h.client();
  return startOpsServer({
    port: 0,
    ...(opts.token !== undefined && { token: opts.token }),
    redis: h.producer.redis,
    queues: opts.queues ?? [],
    checkPlatform: async () => {
      await client.root();
    },
    api: {
      store: h.store,
      runQueue: h.producer.runQueue,
      loadJob: jobLoader(h.config, h.jobsDir),
      client,
      config: h.config,
      jobsDir: h.jobsDir,
    },
  });
}
