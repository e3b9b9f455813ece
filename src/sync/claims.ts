/**
 * Identity claims of one export: which rows share an identity key with
 * another row, decided batch by batch as the export is read. One pure
 * function; the run's claims in Redis (src/state/identity-claims.ts) and the dry run's
 * memory (src/engine/dry-run.ts) each keep what it returns, so both decide
 * alike.
 *
 * Rules: a key is held by the first row that carries it. A key held by
 * another line makes both rows conflicts: each gets a conflict record (the
 * first key it was found to share, and every other line known to share one),
 * and every row of that identity is withheld. Each row of a batch in conflict
 * is reported, also when it was found before (a resumed run that reads the
 * batch again gets the same answer); a row of an earlier batch is reported
 * (`earlier`) once, in the batch that first finds it in conflict, so its
 * planned write can be dropped.
 */

/** A row of the export with its identity keys, as claimed. */
export interface Claim {
  keys: readonly string[];
  line: number;
}

/** What is recorded of a row in conflict. */
export interface ConflictRecord {
  /** The shared identity key (the first found shared, in priority order). */
  identity: string;
  /** The other rows carrying one of its keys, as far as known. */
  otherLines: number[];
}

/** A row that shares an identity with other rows of the same export. */
export interface ClaimConflict extends ConflictRecord {
  line: number;
  /**
   * The row was claimed by an earlier batch: its planned write (if any) must
   * be dropped and it must be reported now, once.
   */
  earlier: boolean;
}

/** What the claims of the export so far say, as far as a batch needs it. */
export interface ClaimsSoFar {
  /**
   * The line holding each key of the batch (absent: none). The holders after
   * this batch's own first claims may be given instead (Redis claims with
   * HSETNX before deciding): a key nobody held goes to the first row of the
   * batch carrying it either way, so the decision is the same.
   */
  holders: ReadonlyMap<string, number>;
  /**
   * The conflict record of every line of the batch and every holder of its
   * keys that has one (absent: not in conflict so far).
   */
  conflicts: ReadonlyMap<number, ConflictRecord>;
}

export interface ClaimDecision {
  /** Keys that had no holder, with the line that holds them now. */
  claimed: Map<string, number>;
  /** The conflict record of every line this batch found in conflict, merged with what was known. */
  recorded: Map<number, ConflictRecord>;
  /** Every row of the batch in conflict, in batch order, then earlier rows newly in conflict. */
  conflicts: ClaimConflict[];
}

export function decideClaims(soFar: ClaimsSoFar, batch: readonly Claim[]): ClaimDecision {
  const claimed = new Map<string, number>();
  // What this batch finds, per line, in the order found.
  const found = new Map<number, ConflictRecord>();
  const note = (line: number, identity: string, other: number): void => {
    const info = found.get(line) ?? { identity, otherLines: [] };
    if (!info.otherLines.includes(other)) info.otherLines.push(other);
    found.set(line, info);
  };
  for (const e of batch) {
    for (const key of e.keys) {
      const holder = soFar.holders.get(key) ?? claimed.get(key);
      if (holder === undefined) claimed.set(key, e.line);
      else if (holder !== e.line) {
        note(e.line, key, holder);
        note(holder, key, e.line);
      }
    }
  }

  // A known record keeps its identity and grows by the lines found now.
  const recorded = new Map<number, ConflictRecord>();
  for (const [line, info] of found) {
    const old = soFar.conflicts.get(line);
    recorded.set(line, {
      identity: old?.identity ?? info.identity,
      otherLines: [...new Set([...(old?.otherLines ?? []), ...info.otherLines])],
    });
  }

  const conflicts: ClaimConflict[] = [];
  const batchLines = new Set<number>();
  for (const e of batch) {
    batchLines.add(e.line);
    const info = recorded.get(e.line) ?? soFar.conflicts.get(e.line);
    if (info) conflicts.push({ line: e.line, ...copy(info), earlier: false });
  }
  for (const [line, info] of recorded) {
    if (!batchLines.has(line) && !soFar.conflicts.has(line))
      conflicts.push({ line, ...copy(info), earlier: true });
  }
  return { claimed, recorded, conflicts };
}

function copy(info: ConflictRecord): ConflictRecord {
  return { identity: info.identity, otherLines: [...info.otherLines] };
}

/** The claims of one export kept in memory (a dry run's): `decideClaims` over maps. */
export class MemoryClaims {
  private readonly holders = new Map<string, number>();
  private readonly recorded = new Map<number, ConflictRecord>();

  claim(batch: readonly Claim[]): ClaimConflict[] {
    const d = decideClaims({ holders: this.holders, conflicts: this.recorded }, batch);
    for (const [key, line] of d.claimed) this.holders.set(key, line);
    for (const [line, info] of d.recorded) this.recorded.set(line, info);
    return d.conflicts;
  }
}
