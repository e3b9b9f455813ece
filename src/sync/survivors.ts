/**
 * Duplicates of one export: rows that claim one platform record (they share
 * an identity key) keep one survivor, by the job's rule, and every other row
 * is a duplicate. Decided row by row as the export streams, from the holder
 * of each identity key so far, so that nothing but the holders is kept.
 *
 * Rules (`beats`, in order):
 * 1. a row whose strongest key our state maps to the record (`sticky`: the
 *    record is already this CRM record's) beats one that is not;
 * 2. `first`: the earlier row; `last`: the later row;
 *    `newest` / `oldest`: the greater / smaller `rank` (the row's `by`
 *    value), a row without one losing to a row with one; equal ranks (or
 *    none on both sides) go to the earlier row.
 *
 * A row beating the holder of every key it carries takes all its keys, and
 * each holder it beat becomes a duplicate (reported as `earlier` when it was
 * decided in an earlier batch: its planned write must go). A row losing to
 * any holder is a duplicate of the first such holder (in key order) and
 * takes nothing. For rows sharing one key, the survivor is the best row of
 * the group whatever the export's order; rows linked through different keys
 * are decided in export order.
 */

export const KEEP_RULES = ['newest', 'oldest', 'first', 'last', 'none'] as const;
export type KeepRule = (typeof KEEP_RULES)[number];

/** What the rule compares of a row. */
export interface Contender {
  line: number;
  /** Our state maps the row's strongest key to the record it matched. */
  sticky: boolean;
  /** The row's `by` value as a number (dates in ms since the epoch); undefined when it has none. */
  rank: number | undefined;
  /** The row's CRM record: its strongest identity key (`x:salesforce:003…`). */
  ref: string;
}

/** A row of the export with its identity keys, as claimed. */
export interface Entrant extends Contender {
  keys: readonly string[];
}

/** A row that lost: to whom, and on which key. */
export interface Loss {
  line: number;
  ref: string;
  /** The row it lost to (the survivor as far as known now). */
  winner: number;
  winnerRef: string;
  /** The identity key the two rows share. */
  identity: string;
  /** The row was decided in an earlier batch: its planned write (if any) must be dropped. */
  earlier: boolean;
}

export interface SurvivorDecision {
  /** Keys whose holder changed (or that had none), with their holder now. */
  taken: Map<string, Contender>;
  /** Every row that lost: rows of the batch in batch order, earlier rows as found. */
  lost: Loss[];
}

/** Whether `c` beats the holder `h` under `keep` (`none` never decides: every row is a conflict). */
export function beats(keep: KeepRule, c: Contender, h: Contender): boolean {
  if (c.sticky !== h.sticky) return c.sticky;
  switch (keep) {
    case 'last':
      return c.line > h.line;
    case 'newest':
    case 'oldest':
      if (c.rank !== h.rank) {
        if (c.rank === undefined) return false;
        if (h.rank === undefined) return true;
        return keep === 'newest' ? c.rank > h.rank : c.rank < h.rank;
      }
      return c.line < h.line;
    default:
      return c.line < h.line;
  }
}

/**
 * Decides a batch against the holders so far (`holders` maps each key of the
 * batch that has one to it). Pure: the Redis scratch runs the same rules in
 * one Lua script (src/state/survivor-claims.ts), the dry run calls this.
 */
export function decideSurvivors(
  keep: KeepRule,
  holders: ReadonlyMap<string, Contender>,
  batch: readonly Entrant[],
): SurvivorDecision {
  const taken = new Map<string, Contender>();
  const lost: Loss[] = [];
  const batchLines = new Set(batch.map((e) => e.line));
  const holderOf = (key: string) => taken.get(key) ?? holders.get(key);
  for (const e of batch) {
    const me: Contender = { line: e.line, sticky: e.sticky, rank: e.rank, ref: e.ref };
    // The distinct other holders of the row's keys, each with the first key found shared.
    const others: { h: Contender; key: string }[] = [];
    for (const key of e.keys) {
      const h = holderOf(key);
      if (h === undefined || h.line === e.line) continue;
      if (!others.some((o) => o.h.line === h.line)) others.push({ h, key });
    }
    const over = others.find((o) => !beats(keep, me, o.h));
    if (over) {
      lost.push(loss(me, over.h, over.key, false));
      continue;
    }
    for (const key of e.keys) taken.set(key, me);
    for (const o of others) lost.push(loss(o.h, me, o.key, !batchLines.has(o.h.line)));
  }
  return { taken, lost };
}

function loss(loser: Contender, winner: Contender, identity: string, earlier: boolean): Loss {
  return {
    line: loser.line,
    ref: loser.ref,
    winner: winner.line,
    winnerRef: winner.ref,
    identity,
    earlier,
  };
}

/**
 * A `by` value as a rank: a number as itself, a numeric text as its number,
 * else a date (ISO 8601 and the forms CRMs write: `2024-01-05 10:00:00`,
 * `2024-01-05T10:00:00.000+0000`) in ms since the epoch, read as UTC when it
 * names no zone. Undefined when it is none of these: such a row ranks below
 * every row with a value.
 */
export function rankOf(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value !== 'string') return undefined;
  const t = value.trim();
  if (t === '') return undefined;
  if (/^[+-]?\d+(\.\d+)?$/.test(t)) return Number(t);
  const m =
    /^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)\s*(Z|[+-]\d{2}:?\d{2})?)?$/i.exec(
      t,
    );
  if (!m) return undefined;
  const zone = m[3] === undefined ? 'Z' : m[3].replace(/^([+-]\d{2})(\d{2})$/, '$1:$2');
  const ms = Date.parse(`${m[1]}T${m[2] ?? '00:00'}${zone}`);
  return Number.isNaN(ms) ? undefined : ms;
}

/** The survivor rule of a run's duplicates kept in memory (a dry run's): `decideSurvivors` over a map. */
export class MemorySurvivors {
  private readonly holders = new Map<string, Contender>();

  constructor(readonly keep: KeepRule) {}

  contend(batch: readonly Entrant[]): Loss[] {
    const known = new Map<string, Contender>();
    for (const e of batch)
      for (const key of e.keys) {
        const h = this.holders.get(key);
        if (h) known.set(key, h);
      }
    const d = decideSurvivors(this.keep, known, batch);
    for (const [key, c] of d.taken) this.holders.set(key, c);
    return d.lost;
  }

  /** The row holding `key` now (the survivor of its duplicates, once the export is read). */
  holder(key: string): Contender | undefined {
    return this.holders.get(key);
  }
}
