/**
 * Errors of the state store. Each has a stable `code`; `retryable` says
 * whether trying again later can help (a Redis hiccup can, a corrupt record
 * or a layout mismatch cannot).
 */

export type StateErrorCode =
  | 'state.redis'
  | 'state.layout-mismatch'
  | 'state.layout-old'
  | 'state.layout-new'
  | 'state.layout-migrating'
  | 'state.corrupt'
  | 'state.invalid-prefix'
  | 'state.unknown-run'
  | 'state.index-build';

export class StateError extends Error {
  override readonly name = 'StateError';
  constructor(
    readonly code: StateErrorCode,
    message: string,
    readonly retryable: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** A command of a pipeline or transaction failed: Redis trouble, worth a retry. */
export function redisError(what: string, cause: unknown): StateError {
  const reason = cause instanceof Error ? cause.message : String(cause);
  return new StateError('state.redis', `Redis failed while ${what}: ${reason}`, true, { cause });
}

/** Sends one Redis call; a failure is a `redisError` saying what was being done. */
export async function redisCall<T>(what: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw redisError(what, err);
  }
}

/** Parses JSON we stored; unreadable text is corrupt state, not a crash of some other kind. */
export function parseStored(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new StateError('state.corrupt', `${what} is not readable JSON`, false, { cause: err });
  }
}
