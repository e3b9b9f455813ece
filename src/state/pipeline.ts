/**
 * Running a pipeline or transaction and unwrapping its replies: any failed
 * command fails the whole call with a StateError (retryable), never a silent
 * `null` that would read as "not found".
 */
import type { ChainableCommander } from 'ioredis';
import { queueScript } from '../redis/scripts.js';
import { redisCall, redisError } from './errors.js';

/** Commands per pipeline chunk: large enough for few round trips, small enough not to stall Redis. */
export const CHUNK = 2000;

/** Executes `p` and returns each command's reply, in order. */
export async function execAll(p: ChainableCommander, what: string): Promise<unknown[]> {
  const replies: [Error | null, unknown][] | null = await redisCall(what, () => p.exec());
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

/*
 * Many single-field hash commands on many keys, as one Lua call instead of
 * one command each (lua/hgets.lua, hsets.lua, hclaims.lua): the keys are all
 * under one hash tag (one Cluster slot), and the client's per-command cost,
 * not Redis, is what limits a batch of thousands (about 3x faster measured).
 * Each adds ONE reply to the pipeline, whose connection has the scripts
 * defined (`defineScripts`).
 */

/**
 * Queues UNLINK of every key, 1,024 a command: a run's scratch is some 20,000
 * keys, and one command of them all would hold a megabyte of arguments.
 */
export function unlinks(p: ChainableCommander, keys: readonly string[]): void {
  for (const part of chunks(keys, 1024)) p.unlink(...part);
}

/** Queues HGET of each `[key, field]`; the reply is an array of values (null when absent). */
export function hgets(p: ChainableCommander, pairs: readonly (readonly [string, string])[]): void {
  queueScript(p, 'hgets', pairs.length, ...pairs.map(([k]) => k), ...pairs.map(([, f]) => f));
}

type Triple = readonly [key: string, field: string, value: string];

/** Queues a script over `[key, field, value]`s: the keys as KEYS, field and value pairs as ARGV. */
function queueTriples(p: ChainableCommander, script: string, triples: readonly Triple[]): void {
  queueScript(
    p,
    script,
    triples.length,
    ...triples.map(([k]) => k),
    ...triples.flatMap(([, f, v]) => [f, v]),
  );
}

/** Queues HSET of each `[key, field, value]`; the reply is the number of new fields. */
export function hsets(p: ChainableCommander, triples: readonly Triple[]): void {
  queueTriples(p, 'hsets', triples);
}

/** Queues HSETNX then HGET of each `[key, field, value]`; the reply is each field's value after. */
export function hclaims(p: ChainableCommander, triples: readonly Triple[]): void {
  queueTriples(p, 'hclaims', triples);
}
