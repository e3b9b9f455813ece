/**
 * A stage of the read (gzip, decoding) over the one below it: when its
 * consumer stops early (a run aborted, a sample taken), the stage below is
 * returned too, so the file or the socket underneath is closed.
 */
export async function* closing<T, U>(
  below: AsyncIterable<T>,
  stage: (it: AsyncIterator<T>) => AsyncGenerator<U>,
): AsyncGenerator<U> {
  const it = below[Symbol.asyncIterator]();
  try {
    yield* stage(it);
  } finally {
    await it.return?.();
  }
}
