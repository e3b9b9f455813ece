/**
 * `crm-sync scheduler [--jobs DIR]`: enqueues runs of the job definitions
 * that have a `schedule`, until SIGTERM/SIGINT. Safe to run in several
 * replicas: each slot is claimed in Redis before it is enqueued. Serves the
 * ops routes (OPS_HOST, OPS_PORT) for health checks and the dashboard.
 */
import type { Command } from 'commander';

export function registerSchedulerCommand(program: Command): void {
  program
    .command('scheduler')
    .description('enqueue scheduled runs of the job definitions until SIGTERM/SIGINT')
    .option('--jobs <DIR>', 'folder of job definitions (env CRM_SYNC_JOBS_DIR, default ./jobs)')
    .action(async (opts: { jobs?: string }) => {
      const { loadConfig } = await import('../config.js');
      const { createLogger } = await import('../log.js');
      const { startOpsServer } = await import('../ops/server.js');
      const { createShutdown } = await import('../ops/shutdown.js');
      const { startSchedulerService } = await import('../schedule/scheduler-service.js');
      const config = loadConfig();
      const logger = createLogger({ level: config.logLevel });
      const shutdown = createShutdown(logger, { deadlineMs: config.shutdownTimeoutMs });
      shutdown.listen();
      try {
        const { redis, queue } = await startSchedulerService({
          config,
          logger,
          shutdown,
          ...(opts.jobs !== undefined && { jobsDir: opts.jobs }),
        });
        // The scheduler never calls the platform: ready means Redis answers.
        const ops = await startOpsServer({
          host: config.ops.host,
          port: config.ops.port,
          ...(config.ops.token !== undefined && { token: config.ops.token }),
          redis,
          queues: [queue],
          checkPlatform: async () => {},
          logger,
        });
        shutdown.register('ops server', () => ops.close());
      } catch (err) {
        // Close whatever opened before the failure, then report it as one line.
        await shutdown.shutdown('start-up failed');
        throw err;
      }
      // Runs until a signal: the shutdown exits the process.
      await new Promise<never>(() => {});
    });
}
