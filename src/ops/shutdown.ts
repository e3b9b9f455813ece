/**
 * Graceful shutdown, done once (graphile-worker's habit, src/main.ts there).
 * Resources register a close function as they open; the first SIGTERM or
 * SIGINT closes them in reverse order of registration within a deadline;
 * a second signal forces the exit; calling `shutdown` again returns the same
 * promise. Closers get an AbortSignal that fires at the deadline, so a worker
 * can wait for its in-flight jobs and then release them (`close(true)`).
 */
import { DEFAULT_SHUTDOWN_TIMEOUT_MS } from '../defaults.js';
import { silentLogger, type Logger } from '../log.js';

export type CloseFn = (ctx: { deadline: AbortSignal }) => Promise<void> | void;

export interface ShutdownResult {
  /** Every closer finished, without error, before the deadline. */
  clean: boolean;
  failed: string[];
  timedOut: string[];
}

/** Where signals come from; `process` in production, an EventEmitter in tests. */
export interface SignalSource {
  on(signal: NodeJS.Signals, listener: () => void): unknown;
  off(signal: NodeJS.Signals, listener: () => void): unknown;
}

export interface ShutdownOptions {
  /** How long closers get in all before the process exits anyway. */
  deadlineMs?: number;
  signals?: readonly NodeJS.Signals[];
  source?: SignalSource;
  exit?: (code: number) => void;
}

export interface Shutdown {
  register(name: string, close: CloseFn): void;
  /** Closes everything once; later calls return the same promise. */
  shutdown(reason?: string): Promise<ShutdownResult>;
  /** Listens for the signals: the first starts `shutdown` and exits when done, the second exits at once. */
  listen(): void;
  /** True once shutdown has begun: loops should stop taking work. */
  readonly stopping: boolean;
}

/** What `workerCloser` needs of a BullMQ Worker. */
export interface ClosableWorker {
  close(force?: boolean): Promise<void>;
  cancelAllJobs(reason?: string): void;
}

/**
 * The closer of a BullMQ worker: stop taking jobs and wait for those in
 * flight; at the deadline, abort them (each processor's AbortSignal fires).
 * An aborted job ends as a failed attempt, or, if the process exits first,
 * keeps its lock until it lapses and BullMQ's stalled-job check gives it to
 * another worker. (A second `close(true)` would not help: BullMQ returns the
 * close already under way.)
 */
export function workerCloser(worker: ClosableWorker): CloseFn {
  return ({ deadline }) => {
    const abort = (): void => worker.cancelAllJobs('shutdown deadline passed');
    if (deadline.aborted) abort();
    else deadline.addEventListener('abort', abort, { once: true });
    return worker.close();
  };
}

export function createShutdown(
  logger: Logger = silentLogger,
  opts: ShutdownOptions = {},
): Shutdown {
  const deadlineMs = opts.deadlineMs ?? DEFAULT_SHUTDOWN_TIMEOUT_MS;
  const signals = opts.signals ?? (['SIGTERM', 'SIGINT'] as const);
  const source: SignalSource = opts.source ?? process;
  const exit = opts.exit ?? ((code: number) => process.exit(code));
  const closers: { name: string; close: CloseFn }[] = [];
  let running: Promise<ShutdownResult> | undefined;
  let listening = false;

  const run = async (reason: string): Promise<ShutdownResult> => {
    logger.info({ reason, deadlineMs }, 'shutting down');
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), deadlineMs);
    timer.unref?.();
    const failed: string[] = [];
    const timedOut: string[] = [];
    const deadlinePassed = new Promise<'deadline'>((resolve) => {
      if (deadline.signal.aborted) resolve('deadline');
      deadline.signal.addEventListener('abort', () => resolve('deadline'), { once: true });
    });
    try {
      for (const { name, close } of [...closers].reverse()) {
        if (deadline.signal.aborted) {
          timedOut.push(name);
          continue;
        }
        const closing = Promise.resolve()
          .then(() => close({ deadline: deadline.signal }))
          .then(
            () => 'closed' as const,
            (err: unknown) => {
              logger.error({ err, resource: name }, 'error while closing');
              return 'failed' as const;
            },
          );
        const outcome = await Promise.race([closing, deadlinePassed]);
        if (outcome === 'failed') failed.push(name);
        else if (outcome === 'deadline') {
          logger.warn({ resource: name }, 'shutdown deadline passed while closing');
          timedOut.push(name);
        } else logger.debug({ resource: name }, 'closed');
      }
    } finally {
      clearTimeout(timer);
    }
    const result = { clean: failed.length === 0 && timedOut.length === 0, failed, timedOut };
    logger.info(result, result.clean ? 'shut down cleanly' : 'shut down with problems');
    return result;
  };

  const shutdown = (reason = 'requested'): Promise<ShutdownResult> => (running ??= run(reason));

  const onSignal = (signal: NodeJS.Signals) => (): void => {
    if (running) {
      logger.warn({ signal }, 'second signal: exiting now');
      exit(1);
      return;
    }
    void shutdown(signal).then((result) => {
      for (const [s, handler] of handlers) source.off(s, handler);
      exit(result.clean ? 0 : 1);
    });
  };
  const handlers = signals.map((s) => [s, onSignal(s)] as const);

  return {
    register(name, close) {
      if (running) throw new Error(`cannot register ${name}: shutdown has begun`);
      closers.push({ name, close });
    },
    shutdown,
    listen() {
      if (listening) return;
      listening = true;
      for (const [s, handler] of handlers) source.on(s, handler);
    },
    get stopping() {
      return running !== undefined;
    },
  };
}
