/**
 * Running a pipeline or transaction and unwrapping its replies: any failed
 * command fails the whole call with a StateError (retryable), never a silent
 * `null` that would read as "not found".
 */
import type { ChainableCommander } from 'ioredis';
import { redisError } from './errors.js';

/** Commands per pipeline chunk: large enough for few round trips, small enough not to stall Redis. */
export const CHUNK = 2000;

/** Executes `p` and returns each command's reply, in order. */
export async function execAll(p: ChainableCommander, what: string): Promise<unknown[]> {
  let replies: [Error | null, unknown][] | null;
  try {
    replies = await p.exec();
  } catch (err) {
    throw redisError(what, err);
  }
  if (replies === null) throw redisError(what, new Error('transaction aborted'));
  return replies.map(([err, value]) => {
    if (err) throw redisError(what, err);
    return value;
  });
}

/** Splits `items` into chunks of at most `size`. */
export function* chunks<T>(items: readonly T[], size = CHUNK): Generator<T[]> {
  for (let i = 0; i < items.length; i += size) yield items.slice(i, i + size);
}
