/**
 * The platform client of a command that lists the platform (`plan`, `audit`):
 * its requests take their turns with the workers' from the shared pacer, so a
 * listing at full speed cannot earn a 429 that holds every worker. Apart from
 * runtime.ts, so that commands that only read state or enqueue (`run`, `runs`,
 * `cancel`, …) never load the HTTP client.
 */
import { requirePlatform, type Config } from '../config.js';
import type { Logger } from '../log.js';
import { PlatformClient } from '../platform/client.js';
import { pacerModeOf, RedisPacer } from '../queue/pacer.js';
import type { Producer } from './runtime.js';

export function pacedClient(
  config: Config,
  producer: Producer,
  logger: Logger,
): { client: PlatformClient; close(): void } {
  const pacer = new RedisPacer({
    redis: producer.redis,
    prefix: config.prefix,
    mode: pacerModeOf(config.platform),
    logger,
  });
  const client = new PlatformClient({
    ...requirePlatform(config),
    timeoutMs: config.platform.timeoutMs,
    logger,
    pacer,
  });
  return {
    client,
    close() {
      pacer.stop();
      client.close();
    },
  };
}
