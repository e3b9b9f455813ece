/**
 * The HTTP edges of the ops API: one-line JSON errors, engine errors mapped
 * to statuses, and query strings and bodies checked against their zod
 * shapes.
 */
import type { Request, Response } from 'express';
import type { z } from 'zod';
import { SourceError } from '../crm/source-error.js';
import {
  NoSuchRunError,
  RetrySourceError,
  RunCompletingError,
  RunConflictError,
  RunEndedError,
  RunNotEndedError,
} from '../engine/run-service.js';
import { SourceCredentialsError } from '../engine/run-source.js';
import { JobError } from '../jobs/definition.js';
import { scrubText } from '../log.js';

/** An answer the route gives on purpose: a status and a one-line reason. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** One line, without registered secrets, URL credentials or auth-header values (`scrubText`). */
export function oneLine(text: string): string {
  return scrubText(text).replace(/\s*\n\s*/g, '; ');
}

/**
 * What an error may tell a caller: its message scrubbed (before anything
 * else, so that a credential is still seen whole), with file paths cut to
 * their last part.
 */
export function errorText(err: unknown): string {
  return withoutFolders(scrubText(err instanceof Error ? err.message : String(err)));
}

/**
 * An absolute path (one that starts a word) named by its last part only: an
 * answer does not tell a caller where the worker keeps its files. URLs are
 * left as they are (their path follows `//host`).
 */
export function withoutFolders(text: string): string {
  return text.replace(/(^|[\s"'(=])\/(?:[^\s"'/]+\/)+/g, '$1');
}

export function sendError(res: Response, status: number, message: string): void {
  res.status(status).json({ error: oneLine(message) });
}

/** The status of an error the engine throws; anything unknown is the server's fault. */
export function statusOf(err: unknown): number {
  if (err instanceof ApiError) return err.status;
  if (err instanceof NoSuchRunError) return 404;
  if (err instanceof JobError) return err.code === 'job.not-found' ? 404 : 422;
  if (
    err instanceof RunNotEndedError ||
    err instanceof RunConflictError ||
    err instanceof RunEndedError ||
    err instanceof RunCompletingError
  )
    return 409;
  if (err instanceof RetrySourceError || err instanceof SourceCredentialsError) return 422;
  if (err instanceof SourceError) return 422;
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && code.startsWith('platform.')) return 502;
  return 500;
}

/** Checks a query string or body; the first problem names its field. */
export function parseInput<T extends z.ZodType>(
  schema: T,
  input: unknown,
  what: string,
): z.output<T> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const keys =
    issue.code === 'unrecognized_keys'
      ? issue.keys.join(', ')
      : issue.path.map(String).join('.') || what;
  const reason = issue.code === 'unrecognized_keys' ? 'unknown field' : issue.message;
  throw new ApiError(400, `${what}: ${keys}: ${reason}`);
}

/** A query string as one value per name (a name given twice is refused). */
export function queryOf(req: Request): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.query)) {
    if (typeof value !== 'string') throw new ApiError(400, `query: ${name}: give it once`);
    out[name] = value;
  }
  return out;
}
