/**
 * When the writing process calls the others to help, pure. One worker
 * process writes at a time (the writer lease, src/queue/writer-lease.ts):
 * its write slots are sized for the whole platform limit
 * (src/queue/limiter.ts), so while it keeps its pace another process would
 * only split the same turns and pay again for its compiler, heap and queue
 * polling. It falls behind when writes wait in the queue and still it takes
 * under BEHIND_SHARE of its pacer's turns, every second for BEHIND_MS, with
 * no 429 in that time (a 429's Retry-After holds every process alike); then
 * it calls for help, and every process writes until no write waits in the
 * queue. A process answers the call only if its machine has SPARE_CORES of
 * idle CPU: where the writer is short because the machine's cores are
 * full, more processes on it only slow each other down (three workers on
 * two cores wrote at 0.67-0.79 of the limit where one wrote at 0.90:
 * docs/BENCHMARKS.md, sync-scale).
 */

/** How often each process renews or seeks the lease, and samples its pace. */
export const TICK_MS = 1_000;
/** How long a lease lasts unrenewed: a writer gone is replaced this long after. */
export const LEASE_MS = 5_000;
/** How long a call for help lasts unrenewed (the writer renews it every tick). */
export const HELP_MS = 3_000;
/** How long the writer must be short of its pace before it calls. */
export const BEHIND_MS = 5_000;
/** The share of the pacer's rate below which the writer is short of it. */
export const BEHIND_SHARE = 0.9;

/** Idle CPU, in cores, a process's machine must have for it to start helping. */
export const SPARE_CORES = 0.5;

/** What the writer sees at a tick. */
export interface PaceSample {
  /** Local ms (performance.now()). */
  at: number;
  /** Write chunks waiting in the queue. */
  waiting: number;
  /** Turns its pacer handed out since it started (`RedisPacer.turnsTaken`). */
  taken: number;
  /** Its pacer's rate, requests/s. */
  rate: number;
  /** 429s it was answered since it started (`RedisPacer.throttled`). */
  throttled: number;
}

/**
 * True when the samples show the writer short of its pace for BEHIND_MS
 * straight: from the newest sample at least BEHIND_MS old to the last,
 * between every two samples writes waited (at both), no 429 came, and the
 * turns taken were under BEHIND_SHARE of the lower of their two rates.
 * A process starting to write is slow for its first seconds (its code not
 * yet compiled, its pools not yet filled), then keeps its pace: that ramp
 * is not being behind. Samples are oldest first.
 */
export function isBehind(samples: readonly PaceSample[]): boolean {
  const last = samples.at(-1);
  if (!last) return false;
  let from = -1;
  for (let i = samples.length - 1; i >= 0; i--) {
    if (last.at - samples[i]!.at >= BEHIND_MS) {
      from = i;
      break;
    }
  }
  if (from < 0) return false;
  for (let i = from + 1; i < samples.length; i++) {
    const [a, b] = [samples[i - 1]!, samples[i]!];
    if (a.waiting === 0 || b.waiting === 0 || b.throttled !== a.throttled) return false;
    const seconds = (b.at - a.at) / 1_000;
    if (b.taken - a.taken >= BEHIND_SHARE * Math.min(a.rate, b.rate) * seconds) return false;
  }
  return true;
}

/**
 * Whether the writer calls for help now: when it is behind, or when help
 * is already called for and writes still wait (help stays until the queue
 * is empty: the writer alone would fall behind again).
 */
export function callsForHelp(samples: readonly PaceSample[], called: boolean): boolean {
  const last = samples.at(-1);
  if (called && last !== undefined && last.waiting > 0) return true;
  return isBehind(samples);
}

/**
 * Whether a process standing by writes: while help is called for, if it
 * is helping already or its machine had SPARE_CORES idle since its last
 * tick (once helping, its own writes take that idle time: it goes on).
 */
export function answersHelp(called: boolean, helping: boolean, spareCores: number): boolean {
  return called && (helping || spareCores >= SPARE_CORES);
}
