/**
 * `crm-sync sandbox`: serves the platform emulator until SIGINT/SIGTERM.
 * Prints one line with its base URL on stdout, so scripts and tests can read
 * where it listens (with `--port 0`, the port the system chose).
 */
import { InvalidArgumentError, type Command } from 'commander';
import { createLogger, registerSecret } from '../log.js';
import { EXTENSIONS, startSandbox, type SandboxExtension } from '@crm-sync/platform-sandbox';

function number(what: string, min: number, max: number, integer: boolean) {
  return (value: string): number => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n) || (integer && !Number.isInteger(n))) {
      throw new InvalidArgumentError(`${what} must be ${integer ? 'an integer' : 'a number'}.`);
    }
    if (n < min || n > max)
      throw new InvalidArgumentError(`${what} must be between ${min} and ${max}.`);
    return n;
  };
}

function extensions(value: string, previous: SandboxExtension[] = []): SandboxExtension[] {
  const out = [...previous];
  for (const name of value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    if (!(EXTENSIONS as readonly string[]).includes(name)) {
      throw new InvalidArgumentError(
        `unknown extension "${name}" (known: ${EXTENSIONS.join(', ')}).`,
      );
    }
    out.push(name as SandboxExtension);
  }
  return out;
}

interface SandboxCliOptions {
  port: number;
  host: string;
  apiKey?: string;
  rateLimit?: number;
  latency?: number;
  faultRate?: number;
  dropAfterCommit?: number;
  pageSize?: number;
  extensions?: SandboxExtension[];
  seed?: number;
}

export function registerSandboxCommand(program: Command): void {
  program
    .command('sandbox')
    .description('serve the platform API emulator (docs/SANDBOX.md) until SIGINT/SIGTERM')
    .showHelpAfterError(false)
    .option(
      '--port <N>',
      'port to listen on (0: any free port)',
      number('--port', 0, 65535, true),
      4010,
    )
    .option('--host <HOST>', 'address to listen on', '127.0.0.1')
    .option('--api-key <K>', 'the API key clients must send (or env SANDBOX_API_KEY)')
    .option(
      '--rate-limit <RPS>',
      'requests per second before 429s',
      number('--rate-limit', 0, 1e6, false),
    )
    .option(
      '--latency <MS>',
      'delay before every answer, in ms',
      number('--latency', 0, 600_000, true),
    )
    .option(
      '--fault-rate <F>',
      'share of requests answered 503 (0..1)',
      number('--fault-rate', 0, 1, false),
    )
    .option(
      '--drop-after-commit <F>',
      'share of writes applied, then cut before the response (0..1)',
      number('--drop-after-commit', 0, 1, false),
    )
    .option(
      '--page-size <N>',
      'default page size of lists (100)',
      number('--page-size', 1, 10_000, true),
    )
    .option(
      '--extensions <LIST>',
      `behaviour beyond the seed: ${EXTENSIONS.join(', ')}`,
      extensions,
    )
    .option(
      '--seed <N>',
      'seed of the fault decisions, for reproducible runs',
      number('--seed', 0, 2 ** 32 - 1, true),
    )
    .action(async (opts: SandboxCliOptions, command: Command) => {
      const apiKey = opts.apiKey ?? process.env.SANDBOX_API_KEY;
      if (!apiKey) {
        command.error('error: an API key is required (--api-key K or env SANDBOX_API_KEY)', {
          exitCode: 2,
          code: 'crm-sync.usage',
        });
      }
      registerSecret(apiKey);
      const sandbox = await startSandbox({
        apiKey,
        port: opts.port,
        host: opts.host,
        logger: createLogger(),
        ...(opts.rateLimit !== undefined && { rateLimit: opts.rateLimit }),
        ...(opts.latency !== undefined && { latencyMs: opts.latency }),
        ...(opts.faultRate !== undefined && { faultRate: opts.faultRate }),
        ...(opts.dropAfterCommit !== undefined && { dropAfterCommit: opts.dropAfterCommit }),
        ...(opts.pageSize !== undefined && { pageSize: opts.pageSize }),
        ...(opts.extensions !== undefined && { extensions: opts.extensions }),
        ...(opts.seed !== undefined && { seed: opts.seed }),
      });
      process.stdout.write(`sandbox listening on ${sandbox.url}\n`);
      await new Promise<void>((resolve, reject) => {
        let stopping = false;
        const stop = (): void => {
          // A second signal does not wait for the clean close.
          if (stopping) process.exit(1);
          stopping = true;
          sandbox.close().then(resolve, reject);
        };
        process.on('SIGINT', stop);
        process.on('SIGTERM', stop);
      });
    });
}
