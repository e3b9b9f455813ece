/**
 * The raw bytes of an export (its spec: source-spec.ts): a local path (fs stream) or
 * an http(s) URL (got stream, timeouts, no got retry: retries belong to the
 * run, not to the read). A gzip body is recognised by its magic bytes, never
 * by its name, and inflated as it streams.
 *
 * Credentials come from the environment only: a URL with userinfo is refused,
 * `CRM_SOURCE_AUTHORIZATION` becomes the Authorization header, and the URL
 * and header values in the spec may say `${ENV_VAR}`. Every such value is
 * registered as a secret. The environment is the one the caller hands in
 * (`SourceEnv`: config's `sourceEnv`, read once at start-up); nothing here
 * reads `process.env`. Errors and logs name a URL by origin and path only
 * (the query may hold a signature, as in presigned links).
 */
import { open } from 'node:fs/promises';
import { extname } from 'node:path';
import { got, HTTPError, RequestError, TimeoutError } from 'got';
import { registerSecret } from '../log.js';
import { gunzipIfNeeded } from './gzip.js';
import { SourceError } from './source-error.js';
import { displayUrl, sourceName, type SourceFormat, type SourceSpec } from './source-spec.js';

export const DEFAULT_TIMEOUT_MS = 30_000;

/** Format by file extension (a `.gz` suffix is looked through), or undefined. */
export function formatFromName(spec: Pick<SourceSpec, 'path' | 'url'>): SourceFormat | undefined {
  let name = spec.path;
  if (name === undefined && spec.url !== undefined) {
    try {
      name = new URL(spec.url).pathname;
    } catch {
      return undefined;
    }
  }
  if (name === undefined) return undefined;
  let ext = extname(name).toLowerCase();
  if (ext === '.gz') ext = extname(name.slice(0, -3)).toLowerCase();
  switch (ext) {
    case '.csv':
    case '.tsv':
    case '.txt':
      return 'csv';
    case '.ndjson':
    case '.jsonl':
      return 'ndjson';
    case '.json':
      return 'json';
    default:
      return undefined;
  }
}

/** The variables a source may reference (`${NAME}`, CRM_SOURCE_AUTHORIZATION). */
export type SourceEnv = Readonly<Record<string, string | undefined>>;

/** No variables: what a read without an environment sees (a `${NAME}` is then not set). */
export const NO_ENV: SourceEnv = Object.freeze({});

export interface OpenOptions {
  signal?: AbortSignal;
  /** Where credentials and `${NAME}` references are read; none when not given. */
  env?: SourceEnv;
}

/** Headers never secret; every other value given for a URL is registered as one. */
const PLAIN_HEADERS = new Set(['accept', 'accept-encoding', 'accept-language', 'user-agent']);

/**
 * Replaces `${NAME}` with the environment variable NAME. Substituted values
 * are registered as secrets: references are how job files carry credentials.
 */
export function expandEnv(value: string, env: SourceEnv, what: string, name: string): string {
  return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_m, v: string) => {
    const got = env[v];
    if (got === undefined || got === '') {
      throw new SourceError(
        'source.config',
        `${what} names the environment variable ${v}, which is not set`,
        {
          source: name,
        },
      );
    }
    registerSecret(got);
    return got;
  });
}

/** HTTP headers for a URL source, from the spec and CRM_SOURCE_AUTHORIZATION. */
export function requestHeaders(spec: SourceSpec, env: SourceEnv): Record<string, string> {
  const name = sourceName(spec);
  const headers: Record<string, string> = {};
  const auth = env.CRM_SOURCE_AUTHORIZATION;
  if (auth) {
    registerSecret(auth);
    headers.authorization = auth;
  }
  for (const [key, raw] of Object.entries(spec.headers ?? {})) {
    const value = expandEnv(raw, env, `header ${key}`, name);
    if (!PLAIN_HEADERS.has(key.toLowerCase())) registerSecret(value);
    headers[key.toLowerCase()] = value;
  }
  return headers;
}

function fileError(err: unknown, path: string): SourceError {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ENOENT')
    return new SourceError('source.not-found', 'no such file', { source: path, cause: err });
  if (code === 'EISDIR')
    return new SourceError('source.unreadable', 'is a directory, not a file', {
      source: path,
      cause: err,
    });
  const why =
    code === 'EACCES' || code === 'EPERM'
      ? 'permission denied'
      : `cannot read (${code ?? String(err)})`;
  return new SourceError('source.unreadable', why, { source: path, cause: err });
}

function httpError(err: unknown, name: string, timeoutMs: number, received: number): SourceError {
  if (err instanceof SourceError) return err;
  if (err instanceof HTTPError) {
    const status = err.response.statusCode;
    const text = err.response.statusMessage ? ` ${err.response.statusMessage}` : '';
    return new SourceError('source.http-status', `GET answered HTTP ${status}${text}`, {
      source: name,
      statusCode: status,
      retryable: status === 408 || status === 429 || status >= 500,
    });
  }
  if (err instanceof TimeoutError) {
    return new SourceError(
      'source.timeout',
      `no answer within ${timeoutMs} ms (${err.event} timeout)`,
      {
        source: name,
      },
    );
  }
  if (err instanceof RequestError) {
    // got's message may quote the URL; only the code is kept.
    const detail =
      received > 0
        ? `download interrupted after ${received} bytes (${err.code})`
        : `cannot connect (${err.code})`;
    return new SourceError('source.unreachable', detail, { source: name });
  }
  return new SourceError('source.unreachable', 'download failed', { source: name, cause: err });
}

const FILE_CHUNK = 64 * 1024;

async function* fileBytes(
  path: string,
  signal: AbortSignal | undefined,
): AsyncGenerator<Uint8Array> {
  let handle;
  try {
    handle = await open(path, 'r');
    const stat = await handle.stat();
    if (stat.isDirectory()) throw Object.assign(new Error('EISDIR'), { code: 'EISDIR' });
  } catch (err) {
    await handle?.close();
    throw fileError(err, path);
  }
  // One buffer, reused for every read: a chunk is valid until the next pull
  // (openBytes' contract), so reading leaves no garbage behind for the GC.
  const buffer = Buffer.allocUnsafe(FILE_CHUNK);
  try {
    while (true) {
      signal?.throwIfAborted();
      const { bytesRead } = await handle.read(buffer, 0, FILE_CHUNK, null);
      if (bytesRead === 0) break;
      yield buffer.subarray(0, bytesRead);
    }
  } catch (err) {
    if (signal?.aborted) throw signal.reason;
    throw fileError(err, path);
  } finally {
    await handle.close();
  }
}

/** The source's URL with its `${VAR}` references expanded; userinfo is refused. */
export function sourceUrl(spec: SourceSpec, env: SourceEnv): URL {
  const name = displayUrl(spec.url ?? '');
  // A query credential is written `?token=${HUB_TOKEN}` in a job file.
  const parsed = new URL(expandEnv(spec.url ?? '', env, 'the URL', name));
  if (parsed.username || parsed.password) {
    registerSecret(decodeURIComponent(parsed.password));
    throw new SourceError(
      'source.credentials-in-url',
      'credentials in the URL are refused; set CRM_SOURCE_AUTHORIZATION or source headers',
      { source: name },
    );
  }
  return parsed;
}

async function* urlBytes(spec: SourceSpec, opts: OpenOptions): AsyncGenerator<Uint8Array> {
  const name = displayUrl(spec.url ?? '');
  const env = opts.env ?? NO_ENV;
  const url = sourceUrl(spec, env).href;
  const timeoutMs = spec.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  // No socket (idle) timeout in got: a slow consumer (a run paused while Redis
  // restarts) leaves the socket idle on purpose. A stalled server is caught
  // below instead, by timing only the waits for the next chunk.
  const stream = got.stream(url, {
    headers: requestHeaders(spec, env),
    retry: { limit: 0 },
    timeout: {
      lookup: timeoutMs,
      connect: timeoutMs,
      secureConnect: timeoutMs,
      response: timeoutMs,
    },
    signal: opts.signal,
  });
  let responded = false;
  stream.once('response', () => (responded = true));
  const it = (stream as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  let received = 0;
  try {
    while (true) {
      // Until the response headers come, got's connect and response timeouts rule.
      const next = await nextWithin(it, responded ? timeoutMs : 0, () => {
        const at = received === 0 ? 'before the first byte' : `after ${received} bytes`;
        return new SourceError(
          'source.timeout',
          `the download stalled: no data for ${timeoutMs} ms ${at}`,
          {
            source: name,
          },
        );
      });
      if (next.done) break;
      received += next.value.length;
      yield next.value;
    }
  } catch (err) {
    if (opts.signal?.aborted) throw opts.signal.reason;
    throw httpError(err, name, timeoutMs, received);
  } finally {
    stream.destroy();
  }
}

/** The next chunk, or the stall error when none comes within `ms`. */
async function nextWithin<T>(
  it: AsyncIterator<T>,
  ms: number,
  stalled: () => Error,
): Promise<IteratorResult<T>> {
  const pending = it.next();
  if (ms <= 0) return pending;
  // The loser of the race may still reject when the stream is destroyed.
  pending.catch(() => {});
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(stalled()), ms);
  });
  try {
    return await Promise.race([pending, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The decompressed bytes of a source. Errors are `SourceError`s naming it.
 * A chunk is valid until the next one is pulled (file reads reuse one buffer):
 * copy what must be kept longer.
 */
export function openBytes(spec: SourceSpec, opts: OpenOptions = {}): AsyncIterable<Uint8Array> {
  const name = sourceName(spec);
  const raw =
    spec.url !== undefined ? urlBytes(spec, opts) : fileBytes(spec.path ?? '', opts.signal);
  return gunzipIfNeeded(raw, name);
}
