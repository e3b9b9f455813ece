/**
 * How a run's own steps notice a cancel (the mark `cancelRun` sets on the
 * run record): `RunCancelledError` cuts a step short and run.ts ends the
 * run; `watchCancel` turns the mark into an AbortSignal for a step that
 * waits on the platform (finalize's verification listing), so the request
 * in flight is aborted instead of the whole listing being waited for.
 */
import type { Runs } from '../state/runs.js';

/** A step of a run cut off by a cancel of the run (run.ts ends the run). */
export class RunCancelledError extends Error {
  constructor(runId: string, during: string) {
    super(`run ${runId} was cancelled while ${during}`);
    this.name = 'RunCancelledError';
  }
}

export interface CancelWatch {
  /** Aborted once the run is asked to cancel. */
  readonly signal: AbortSignal;
  stop(): void;
}

/**
 * Reads the run record every `everyMs` and aborts `signal` once it carries
 * a cancel mark. A read that fails is tried again at the next tick; one
 * read at a time.
 */
export function watchCancel(
  store: { runs: Pick<Runs, 'get'> },
  runId: string,
  everyMs: number,
): CancelWatch {
  const controller = new AbortController();
  let reading = false;
  const timer = setInterval(() => {
    if (reading || controller.signal.aborted) return;
    reading = true;
    store.runs
      .get(runId)
      .then((run) => {
        if (run?.cancelRequested !== undefined)
          controller.abort(new RunCancelledError(runId, run.status));
      })
      .catch(() => undefined)
      .finally(() => {
        reading = false;
      });
  }, everyMs);
  timer.unref();
  return {
    signal: controller.signal,
    stop: () => clearInterval(timer),
  };
}
