import { redactSecrets } from '../log.js';

/** Exit codes of the CLI, documented in README. */
export const ExitCode = {
  ok: 0,
  failed: 1,
  usage: 2,
  config: 3,
  unavailable: 4,
} as const;

/** Prints an error as one line (or with its stack when verbose) and sets the exit code. */
export function reportFatal(err: unknown, verbose: boolean): void {
  const e = err instanceof Error ? err : new Error(String(err));
  const code = (e as { code?: unknown }).code;
  const text = verbose && e.stack ? e.stack : `crm-sync: ${e.message}`;
  process.stderr.write(`${redactSecrets(text)}\n`);
  process.exitCode = code === 'crm-sync.config' ? ExitCode.config : ExitCode.failed;
}
