/**
 * How the CLI ends: its exit codes, and a fatal error as one line. It loads
 * no library module until an error needs one, so `--help` stays light.
 */

/** Exit codes of the CLI, documented in docs/CLI.md and the root --help. */
export const ExitCode = {
  ok: 0,
  failed: 1,
  usage: 2,
  config: 3,
  unavailable: 4,
  stopped: 5,
  problems: 6,
  cancelled: 7,
} as const;

/** The exit code table printed under the root program's --help. */
export const EXIT_CODES_HELP = `
Exit codes:
  0  ok (a run completed; rejected rows do not make it fail)
  1  failed (a run failed, or the command did)
  2  usage (unknown command or option, bad option value)
  3  configuration (environment variables, job definitions, mappings)
  4  Redis unreachable
  5  a run stopped by a safety threshold before writing (--force overrides)
  6  audit found problems (shared identities, records our state lost)
  7  a run was cancelled (crm-sync cancel, the API)
Errors are one line; --verbose prints the stack.`;

/** Exit code for a finished run: 0 completed, 1 failed, 5 stopped by a threshold, 7 cancelled. */
export function exitCodeOf(status: string): number {
  if (status === 'completed') return ExitCode.ok;
  if (status === 'stopped') return ExitCode.stopped;
  if (status === 'cancelled') return ExitCode.cancelled;
  return ExitCode.failed;
}

/** Prints an error as one line (or with its stack when verbose) and sets the exit code. */
export async function reportFatal(err: unknown, verbose: boolean): Promise<void> {
  // Loaded already by the command that failed, except for an error before it began.
  const { redactSecrets } = await import('../log.js');
  const { RedisUnavailableError } = await import('../redis/connection.js');
  const e = err instanceof Error ? err : new Error(String(err));
  const code = (e as { code?: unknown }).code;
  const text = verbose && e.stack ? e.stack : `crm-sync: ${e.message}`;
  process.stderr.write(`${redactSecrets(text)}\n`);
  process.exitCode =
    err instanceof RedisUnavailableError
      ? ExitCode.unavailable
      : code === 'crm-sync.config' || code === 'job.invalid' || code === 'job.not-found'
        ? ExitCode.config
        : ExitCode.failed;
}
