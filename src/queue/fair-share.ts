/**
 * Who goes next among the runs writing at once, pure: weighted round robin
 * by run, each run's chunk jobs placed in rounds that the write queue serves
 * in order (BullMQ priorities: the lowest first, first come first served
 * within one). A round has `unit` lines of each run of weight 1, `w` times
 * that of a run of weight `w` (its job's `priority`); so runs with writes
 * waiting share the queue in proportion to their weights, counted in
 * writes, whatever each has already enqueued and however long its chunks
 * are, and a run that starts while another has thousands of writes waiting
 * has its first chunk in the round served next.
 *
 * The unit is a chunk's lines as the runs cut them at the limit known when
 * they started to write (src/queue/limiter.ts `chunkSize`): each run
 * proposes its own, and the share takes it whenever nothing waits in the
 * queue. Every run is level then, so no chunk waiting was costed by
 * another unit; a limit learned meanwhile (`auto`) shortens the rounds
 * from the next time the queue drains.
 *
 * This is start-time fair queuing with rounds for virtual time. Tags are
 * kept in thousandths of a round (`ROUND` units): a chunk's tag is where its
 * run's last chunk ended, or the current round `v` when that is earlier (a
 * run that waited earns no credit); its priority is the round its tag falls
 * in. `v` is the round of the first chunk waiting in the queue, never going
 * back (a retried chunk returns with its old, earlier round and goes first);
 * when no chunk waits, every run's work has been served and all start level
 * at the latest tag. Tagging and adding to the queue are two steps, so a
 * run's chunks are "on their way" from their tags until the run says they
 * are in the queue (`landed`): while any are, an empty queue is not taken
 * for a served one (a run starting then would be tagged after them all).
 *
 * The state lives in Redis and the same rules run there, atomically with
 * the reading of the queue (src/queue/lua/fair-share-5.lua, the store in
 * fair-share-store.ts; a test keeps both equal): every worker process and
 * every run decides from one state.
 */

/** Units of one round: tags are whole numbers of them. */
export const ROUND = 1_000;
/** BullMQ's highest priority; a later round is written as this one (first come, first served). */
export const PRIORITY_LIMIT = 2_097_151;
/**
 * Rounds are numbered again from 1 once this many have passed and the
 * queue has been idle for REBASE_IDLE_MS: nothing waiting, delayed or
 * active, and no chunk tagged since (one tagged may be on its way to the
 * queue). Until then a queue never idle reaches PRIORITY_LIMIT after
 * about a million more rounds (50 million writes at a round of 50; three
 * days of writing or more at a round of a quarter second's writes, a
 * limit under 200/s: src/queue/limiter.ts) and serves first come, first
 * served from there, with no bound on a run's writes waiting (`backlog`).
 */
export const REBASE_AT = 1_048_576;
export const REBASE_IDLE_MS = 60_000;
/**
 * How long a run's chunks are taken to be on their way to the queue at
 * most: a process that stopped between tagging and adding them never says
 * they landed. Adding takes milliseconds, seconds through a Redis failover.
 */
export const ON_THE_WAY_MS = 30_000;
/** The highest weight a job's `priority` may give its runs. */
export const MAX_WEIGHT = 100;

/** The share's state: all tags in units. */
export interface FairState {
  /** The current round's start: no new chunk is tagged earlier. */
  v: number;
  /** Lines of a round of a run of weight 1 (0: none taken yet). */
  unit: number;
  /** Per run, the tag after its last chunk (runs whose tag `v` has passed are forgotten). */
  runs: Record<string, number>;
  /** When a chunk was last tagged (ms). */
  at: number;
  /** Per run whose chunks are on their way to the queue, when they were tagged (ms). */
  landing: Record<string, number>;
}

/** What the write queue holds, as the share reads it before each decision. */
export interface QueueView {
  /** The priority of the first chunk waiting, if any waits. */
  head?: number;
  /** Nothing waiting, delayed or active at all. */
  idle: boolean;
  /** ms (Redis' clock). */
  now: number;
}

export function initialState(): FairState {
  return { v: ROUND, unit: 0, runs: {}, at: 0, landing: {} };
}

/**
 * The state brought up to what the queue holds, for a run whose chunks
 * have `unit` lines: the round's unit while nothing waits (or none was
 * taken yet).
 */
export function observe(state: FairState, queue: QueueView, unit: number): FairState {
  const landing: Record<string, number> = {};
  for (const [run, at] of Object.entries(state.landing))
    if (queue.now - at < ON_THE_WAY_MS) landing[run] = at;
  if (queue.head !== undefined) {
    const v = Math.max(state.v, queue.head * ROUND);
    const runs: Record<string, number> = {};
    for (const [run, tag] of Object.entries(state.runs)) if (tag > v) runs[run] = tag;
    return { ...state, v, unit: state.unit > 0 ? state.unit : unit, runs, landing };
  }
  // Nothing waits, but chunks on their way will: nothing is served yet.
  if (Object.keys(landing).length > 0) return { ...state, landing };
  // Nothing waits: every chunk tagged has been served (or is delayed with its own priority).
  let v = Math.max(state.v, ...Object.values(state.runs));
  if (queue.idle && v >= REBASE_AT * ROUND && queue.now - state.at >= REBASE_IDLE_MS) v = ROUND;
  return { ...state, v, unit, runs: {}, landing };
}

/** The units a chunk of `lines` costs a run of weight `weight`, a round's unit being `unit` lines. */
export function chunkCost(lines: number, unit: number, weight: number): number {
  return Math.max(1, Math.ceil((lines * ROUND) / (unit * weight)));
}

/** The priority (BullMQ: lowest first) of a chunk tagged `tag`. */
export function priorityOf(tag: number): number {
  return Math.min(Math.max(1, Math.floor(tag / ROUND)), PRIORITY_LIMIT);
}

/**
 * Tags a run's next chunks, of `lines` lines each, in order, costed by the
 * state's unit: their priorities and the new state, where they are on their
 * way to the queue until `landed`.
 */
export function assign(
  state: FairState,
  runId: string,
  lines: readonly number[],
  weight: number,
  now: number,
): { state: FairState; priorities: number[] } {
  let tag = Math.max(state.v, state.runs[runId] ?? 0);
  const priorities: number[] = [];
  for (const n of lines) {
    priorities.push(priorityOf(tag));
    tag += chunkCost(n, state.unit, weight);
  }
  return {
    state: {
      ...state,
      runs: { ...state.runs, [runId]: tag },
      at: now,
      landing: { ...state.landing, [runId]: now },
    },
    priorities,
  };
}

/** The run's chunks tagged so far are in the queue (or never will be). */
export function landed(state: FairState, runId: string): FairState {
  if (!(runId in state.landing)) return state;
  const landing = { ...state.landing };
  delete landing[runId];
  return { ...state, landing };
}

/**
 * How far (units) a run's chunks reach past the current round: its writes
 * still waiting. Rounds past PRIORITY_LIMIT count as one: their chunks wait
 * with the limit's priority, served first come, first served, and the
 * current round (read from the queue's head) cannot pass the limit; counted
 * whole, such a backlog would only grow while its chunks are served, and
 * hold its run until the queue drains.
 */
export function backlog(state: FairState, runId: string): number {
  const reach = Math.min(state.runs[runId] ?? 0, (PRIORITY_LIMIT + 1) * ROUND);
  return Math.max(0, reach - state.v);
}

/** A backlog in writes: a run of weight `weight` has `weight` × `unit` lines in each round. */
export function waitingWrites(units: number, weight: number, unit: number): number {
  return Math.ceil((units / ROUND) * weight * unit);
}
