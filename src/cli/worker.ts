/**
 * `crm-sync worker` (the run and write workers) and `crm-sync start` (the
 * workers and the scheduler in one process: the container's default). Both
 * serve the ops routes and run until SIGTERM/SIGINT, then close gracefully:
 * stop taking jobs, let in-flight writes finish within the deadline, release
 * the rest, close connections in reverse order.
 */
import type { Command } from 'commander';
import type { Queue } from 'bullmq';
import { jobsOption } from './options.js';

export function registerWorkerCommands(program: Command): void {
  jobsOption(
    program.command('worker').description('run the run and write workers until SIGTERM/SIGINT'),
  ).action(async (opts: { jobs?: string }) => serve({ scheduler: false, ...opts }));

  jobsOption(
    program
      .command('start')
      .description(
        'run the workers and the scheduler until SIGTERM/SIGINT (the container default)',
      ),
  ).action(async (opts: { jobs?: string }) => serve({ scheduler: true, ...opts }));
}

async function serve(opts: { scheduler: boolean; jobs?: string }): Promise<never> {
  const { cliRuntime } = await import('./runtime.js');
  const { startWorkerService } = await import('../engine/worker-service.js');
  const { createMetrics } = await import('../ops/metrics.js');
  const { startOpsServer } = await import('../ops/server.js');
  const { createShutdown } = await import('../ops/shutdown.js');
  const { startSchedulerService } = await import('../schedule/scheduler-service.js');
  const { config, logger } = cliRuntime();
  const shutdown = createShutdown(logger, { deadlineMs: config.shutdownTimeoutMs });
  shutdown.listen();
  const metrics = createMetrics();
  try {
    const jobsDir = opts.jobs ?? config.jobsDir;
    const service = await startWorkerService({ config, logger, shutdown, jobsDir, metrics });
    const queues: Queue[] = [
      service.runQueue as Queue,
      service.writeQueue as Queue,
      service.alertQueue as Queue,
    ];
    if (opts.scheduler) {
      // One job loader for the process: the schedules read each job as the workers do.
      await startSchedulerService({
        config,
        logger,
        shutdown,
        jobsDir,
        loadJob: service.ctx.loadJob,
      });
    }
    const ops = await startOpsServer({
      host: config.ops.host,
      port: config.ops.port,
      ...(config.ops.token !== undefined && { token: config.ops.token }),
      redis: service.ctx.store.connection,
      queues,
      metrics,
      // Ready only while the platform accepts our key.
      checkPlatform: async () => {
        await service.ctx.client.root();
      },
      logger,
      // The JSON API reads and starts runs with the worker's own store, queue, jobs and client.
      api: {
        store: service.ctx.store,
        runQueue: service.runQueue,
        loadJob: service.ctx.loadJob,
        client: service.ctx.client,
        config,
        jobsDir,
        logger,
      },
    });
    shutdown.register('ops server', () => ops.close());
    logger.info({ ops: ops.url }, 'ops server listening');
  } catch (err) {
    await shutdown.shutdown('start-up failed');
    throw err;
  }
  return new Promise<never>(() => {});
}
