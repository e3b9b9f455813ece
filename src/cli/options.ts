/** Option value parsers shared by commands: a bad value is a usage error (exit 2). */
import { InvalidArgumentError, type Command } from 'commander';

/** Parses an integer option of at least `min`. */
export function integerOption(what: string, min: number) {
  return (value: string): number => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isInteger(n) || n < min) {
      throw new InvalidArgumentError(`${what} must be an integer of at least ${min}.`);
    }
    return n;
  };
}

/** The `--jobs DIR` option, shared by the commands that read job definitions. */
export function jobsOption(cmd: Command): Command {
  return cmd.option(
    '--jobs <dir>',
    'folder of job definitions (default: CRM_SYNC_JOBS_DIR or ./jobs)',
  );
}
