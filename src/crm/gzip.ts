/**
 * A gzipped export, told by its magic bytes (1f 8b), never by its name, and
 * inflated as it streams. A corrupt or truncated body is a `source.gzip`
 * error naming the source.
 */
import { Readable, pipeline } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { closing } from './closing.js';
import { SourceError } from './source-error.js';

function gzipError(err: unknown, name: string): unknown {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  // Faults of the bytes underneath (HTTP, file, abort) pass through as they are.
  if (typeof code !== 'string' || !code.startsWith('Z_')) return err;
  const detail =
    code === 'Z_BUF_ERROR'
      ? 'truncated gzip: the compressed data ends early'
      : `corrupt gzip: ${(err as Error | undefined)?.message ?? String(err)}`;
  return new SourceError('source.gzip', detail, { source: name, cause: err });
}

/** Inflates a gzip stream (by magic bytes 1f 8b); other bytes pass through. */
export function gunzipIfNeeded(
  bytes: AsyncIterable<Uint8Array>,
  name: string,
): AsyncGenerator<Uint8Array> {
  return closing(bytes, (it) => inflate(it, name));
}

async function* inflate(it: AsyncIterator<Uint8Array>, name: string): AsyncGenerator<Uint8Array> {
  let head: Uint8Array = new Uint8Array(0);
  // Two bytes decide; a first chunk of one byte is rare but possible over HTTP.
  while (head.length < 2) {
    const next = await it.next();
    if (next.done) break;
    // Copied: the file reader reuses its buffer for the next chunk.
    head = head.length === 0 ? Buffer.from(next.value) : Buffer.concat([head, next.value]);
  }
  const rest: AsyncIterable<Uint8Array> = {
    [Symbol.asyncIterator]: () => it,
  };
  if (!(head[0] === 0x1f && head[1] === 0x8b)) {
    if (head.length > 0) yield head;
    yield* rest;
    return;
  }
  async function* all(): AsyncGenerator<Uint8Array> {
    yield head;
    // zlib reads ahead, so each chunk is copied out of the reused buffer.
    for await (const chunk of rest) yield Buffer.from(chunk);
  }
  const gunzip = pipeline(Readable.from(all(), { objectMode: false }), createGunzip(), () => {});
  try {
    for await (const chunk of gunzip as AsyncIterable<Buffer>) yield chunk;
  } catch (err) {
    throw gzipError(err, name);
  } finally {
    gunzip.destroy();
  }
}
