/**
 * When the writing process calls the others to help, pure. One worker
 * process writes at a time (the writer lease, src/queue/writer-lease.ts):
 * its write slots are sized for the whole platform limit
 * (src/queue/limiter.ts), so while it keeps its pace another process would
 * only split the same turns and pay again for its compiler, heap and queue
 * polling.
 *
 * It falls behind when writes wait in the queue and still it takes under
 * BEHIND_SHARE of its pacer's turns, every second for BEHIND_MS, with no
 * 429 in that time (a 429's Retry-After holds every process alike), and
 * its last second was not its fastest (a writer still speeding up is
 * starting, and its code being compiled, which help does not cure); then
 * it calls for help, and the processes standing by write too. Help must
 * pay: HELP_TRIAL_MS after the call, every process's requests together
 * must go at least HELP_GAIN times the writer's best second alone, or the
 * call is withdrawn. Either way the call stands, or stays withdrawn, until
 * no write waits in the queue. (More writers are not always faster: three
 * workers on two cores wrote at 0.59-0.79 of a 1,500/s limit where one
 * wrote at 0.85-0.94, docs/BENCHMARKS.md, sync-scale.) A process answers
 * the call only if its machine had SPARE_CORES of idle CPU.
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
/** How long help has to show its worth: the helpers' first tick, and their first seconds. */
export const HELP_TRIAL_MS = 6_000;
/** What every process's answers together must reach after a call, over the writer's best second alone. */
export const HELP_GAIN = 1.1;
/** Help's rate is counted from this long after the call: the helpers' first tick and first writes. */
export const HELP_SETTLE_MS = 2_000;
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
  /** Requests of every process answered other than by a 429 (`RedisPacer.answeredAll`). */
  answered: number;
}

/** The writer's call for help: none, made (and whether it has paid), or withdrawn. */
export type HelpCall =
  | { state: 'none' }
  | { state: 'called'; at: number; best: number; paid: boolean }
  | { state: 'withdrawn' };

export const NO_CALL: HelpCall = { state: 'none' };

/**
 * The first sample of the last BEHIND_MS when the samples show the writer
 * short of its pace for that long straight: from the newest sample at least
 * BEHIND_MS old to the last, between every two samples writes waited (at
 * both), no 429 came, and the turns taken were under BEHIND_SHARE of the
 * lower of their two rates; and it is no longer speeding up (its last
 * second is not faster than every other). Samples are oldest first.
 */
export function behindSince(samples: readonly PaceSample[]): number | undefined {
  const last = samples.at(-1);
  if (!last) return undefined;
  const from = samples.findLastIndex((s) => last.at - s.at >= BEHIND_MS);
  if (from < 0) return undefined;
  const rates: number[] = [];
  for (let i = from + 1; i < samples.length; i++) {
    const [a, b] = [samples[i - 1]!, samples[i]!];
    if (a.waiting === 0 || b.waiting === 0 || b.throttled !== a.throttled) return undefined;
    const rate = perSecond(a, b, 'taken');
    if (rate >= BEHIND_SHARE * Math.min(a.rate, b.rate)) return undefined;
    rates.push(rate);
  }
  // Still speeding up (its last second its fastest): a start, not a limit.
  const lastRate = rates.at(-1)!;
  if (rates.length > 1 && rates.slice(0, -1).every((r) => r < lastRate)) return undefined;
  return from;
}

/** Turns taken, or requests answered, a second between two samples. */
function perSecond(a: PaceSample, b: PaceSample, count: 'taken' | 'answered'): number {
  return (b[count] - a[count]) / Math.max(0.001, (b.at - a.at) / 1_000);
}

/**
 * The call after this tick's sample (the last). No write waiting ends any
 * call. A writer behind (`behindSince`) calls, noting its best second in
 * that span. HELP_TRIAL_MS after a call, the rate of every process's
 * answers from HELP_SETTLE_MS after it to now must be HELP_GAIN times that
 * best second, or the call is withdrawn.
 */
export function nextCall(samples: readonly PaceSample[], call: HelpCall): HelpCall {
  const last = samples.at(-1);
  if (!last) return call;
  if (last.waiting === 0) return NO_CALL;
  if (call.state === 'withdrawn') return call;
  if (call.state === 'called') {
    if (call.paid || last.at - call.at < HELP_TRIAL_MS) return call;
    const from = samples.find((s) => s.at >= call.at + HELP_SETTLE_MS);
    if (!from || from === last) return call;
    return perSecond(from, last, 'answered') >= HELP_GAIN * call.best
      ? { ...call, paid: true }
      : { state: 'withdrawn' };
  }
  const from = behindSince(samples);
  if (from === undefined) return call;
  let best = 0;
  for (let i = from + 1; i < samples.length; i++)
    best = Math.max(best, perSecond(samples[i - 1]!, samples[i]!, 'answered'));
  return { state: 'called', at: last.at, best, paid: false };
}

/**
 * Whether a process standing by writes: while help is called for, if it
 * is helping already or its machine had SPARE_CORES idle since its last
 * tick (once helping, its own writes take that idle time: it goes on).
 */
export function answersHelp(called: boolean, helping: boolean, spareCores: number): boolean {
  return called && (helping || spareCores >= SPARE_CORES);
}
