/**
 * `crm-sync sandbox`: serves the platform emulator until SIGINT/SIGTERM.
 * Prints one line with its base URL on stdout, so scripts and tests can read
 * where it listens (with `--port 0`, the port the system chose).
 *
 * The emulator is a development tool in its own workspace package
 * (packages/platform-sandbox), a devDependency: the production image has no
 * copy of it, so it is loaded only when this command runs, and its absence is
 * a one-line error instead of a failure of every other command.
 */
import { InvalidArgumentError, type Command } from 'commander';
import type { RateLimitMode, SandboxExtension } from '@crm-sync/platform-sandbox';

const PACKAGE = '@crm-sync/platform-sandbox';

export const SANDBOX_NOT_INSTALLED =
  'the platform sandbox is a development tool and is not in this installation; run it from a clone with `npm ci`';

/** The sandbox package, or a clear error when this installation has none. */
async function loadSandbox(): Promise<typeof import('@crm-sync/platform-sandbox')> {
  try {
    return await import('@crm-sync/platform-sandbox');
  } catch (err) {
    const e = err as { code?: unknown; message?: unknown };
    // Only the package itself missing; a broken copy of it keeps its own error.
    if (e.code === 'ERR_MODULE_NOT_FOUND' && String(e.message).includes(`'${PACKAGE}'`)) {
      throw new Error(SANDBOX_NOT_INSTALLED);
    }
    throw err;
  }
}

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

/** `100/s`, `3000/m`, `10/h`, `5/d` or a bare number per second; 0 turns the limit off. */
function rate(value: string): string {
  const v = value.trim();
  if (/^\d+(\.\d+)?$/.test(v) || /^\d+\s*\/\s*[smhd][a-z]*$/i.test(v)) return v;
  throw new InvalidArgumentError('--rate-limit must be N/s, N/m, N/h, N/d or a number per second.');
}

const MODES: readonly RateLimitMode[] = ['sliding', 'fixed', 'bucket'];

function mode(value: string): RateLimitMode {
  const m = MODES.find((x) => x === value.trim());
  if (!m) throw new InvalidArgumentError(`--rate-limit-mode must be one of ${MODES.join(', ')}.`);
  return m;
}

/** Names given to --extensions; checked against the package's list once it is loaded. */
function extensions(value: string, previous: string[] = []): string[] {
  return [
    ...previous,
    ...value
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  ];
}

interface SandboxCliOptions {
  port: number;
  host: string;
  apiKey?: string;
  rateLimit?: string;
  rateLimitMode?: RateLimitMode;
  latency?: number;
  faultRate?: number;
  dropAfterCommit?: number;
  pageSize?: number;
  extensions?: string[];
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
      '--rate-limit <RATE>',
      'requests per API key before 429s: N/s, N/m, N/h, N/d, or a number per second',
      rate,
    )
    .option(
      '--rate-limit-mode <MODE>',
      'how the limit counts: sliding (DRF, default), fixed (windows) or bucket',
      mode,
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
      'opt-in behaviour beyond the documented API, comma-separated (docs/SANDBOX.md)',
      extensions,
    )
    .option(
      '--seed <N>',
      'seed of the fault decisions, for reproducible runs',
      number('--seed', 0, 2 ** 32 - 1, true),
    )
    .action(async (opts: SandboxCliOptions, command: Command) => {
      const { EXTENSIONS, startSandbox } = await loadSandbox();
      const known: readonly string[] = EXTENSIONS;
      const unknown = (opts.extensions ?? []).find((name) => !known.includes(name));
      if (unknown !== undefined) {
        command.error(
          `error: unknown extension "${unknown}" in --extensions (known: ${known.join(', ')})`,
          { exitCode: 2, code: 'crm-sync.usage' },
        );
      }
      const { loadConfig } = await import('../config.js');
      const { createLogger, registerSecret } = await import('../log.js');
      const config = loadConfig();
      const apiKey = opts.apiKey ?? config.sandboxApiKey;
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
        logger: createLogger({ level: config.logLevel }),
        ...(opts.rateLimit !== undefined && { rateLimit: opts.rateLimit }),
        ...(opts.rateLimitMode !== undefined && { rateLimitMode: opts.rateLimitMode }),
        ...(opts.latency !== undefined && { latencyMs: opts.latency }),
        ...(opts.faultRate !== undefined && { faultRate: opts.faultRate }),
        ...(opts.dropAfterCommit !== undefined && { dropAfterCommit: opts.dropAfterCommit }),
        ...(opts.pageSize !== undefined && { pageSize: opts.pageSize }),
        ...(opts.extensions !== undefined && {
          extensions: opts.extensions as SandboxExtension[],
        }),
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
