/** Option value parsers shared by commands: a bad value is a usage error (exit 2). */
import { InvalidArgumentError } from 'commander';

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
