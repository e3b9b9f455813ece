/**
 * The planner: from a mapped row and what the store knows about it, the one
 * thing to do. Pure: the same inputs give the same action.
 *
 * Order of the rules (first match wins):
 * 1. `pending`: an earlier create of this identity has an unknown outcome.
 *    Nothing else may happen until it is verified (listing), or a duplicate
 *    could be born.
 * 2. No platform id known: `create`, or `skip` in update-only mode.
 *    A record found through a weaker key than the row's external_id that
 *    belongs to another source is a `conflict`, left untouched (match.ts).
 * 3. `unchanged` iff the stored hash (of the last confirmed write) equals the
 *    row's hash (with `verifyRemote`, and the platform's values known: only
 *    if they equal the row's too, so that `--full` corrects drift).
 * 4. `adopt` when the platform's values are known and equal on every mapped
 *    field: nothing to send, the store records the hash. The store gives
 *    `remote` only when it is no older than our last write to that record.
 * 5. `skip` in create-only mode (it exists).
 * 6. `unsupported` for a changed member unless the job opts in to
 *    PUT /members/{id}.
 * 7. `update`, with the field diff when the platform's values are known.
 */
import type { Action, Body, Mode, PendingCreate, SkipAction, UnsupportedAction } from './action.js';
import { diffFields } from './diff.js';
import type { Entity } from './identity.js';
import { foreignRecordReason, foundByExternalId } from './match.js';

/** A valid mapped row, identified and hashed. */
export interface PlanInput<B extends Body = Body> {
  line: number;
  body: B;
  /** Identity keys in priority order (never empty: such rows are invalid). */
  keys: string[];
  /** `contentHash(body, fingerprint)`. */
  hash: string;
}

/** What the store knows about one record (all fields absent: a new record). */
export interface Known {
  /** The platform record this row maps to, from our state or the listing index. */
  platformId?: number;
  /** Content hash of the last confirmed write (absent when matched through the index only). */
  storedHash?: string;
  /** The platform's current values of its request fields, when known and fresh. */
  remote?: Record<string, unknown>;
  /** An earlier create of this identity whose outcome is unknown. */
  pending?: PendingCreate;
  /** The identity key that found the record (the strongest that names it). */
  matchedBy?: string;
  /** Another job that wrote the record last (absent: the job asking, or none we know of). */
  writtenBy?: string;
}

export interface PlanOptions {
  entity: Entity;
  /** Default `upsert`. */
  mode?: Mode;
  /** The job opts in to PUT /members/{id} (members only; companies always update). */
  memberUpdates?: boolean;
  /**
   * Compare with the platform's values (when known) even when the stored hash
   * matches: a `--full` run corrects records edited on the platform by hand.
   */
  verifyRemote?: boolean;
}

export const UNSUPPORTED_MEMBER_UPDATE = 'update not supported by the platform API';

/** The action for one row. */
export function planRecord<B extends Body>(
  input: PlanInput<B>,
  known: Known,
  opts: PlanOptions,
): Action<B> {
  const { line, keys, hash, body } = input;
  const mode = opts.mode ?? 'upsert';

  if (known.pending) {
    return {
      kind: 'pending',
      line,
      keys,
      hash,
      body,
      pending: known.pending,
      reason:
        'an earlier create of this record has an unknown outcome; it is verified by listing first',
    };
  }

  const platformId = known.platformId;
  if (platformId === undefined) {
    if (mode === 'update-only') {
      return skip(
        line,
        keys,
        undefined,
        'not on the platform, and update-only mode creates nothing',
      );
    }
    return { kind: 'create', line, keys, hash, body };
  }

  const foreign = foreignRecordReason(opts.entity, keys, { platformId, ...known });
  if (foreign !== undefined) {
    return {
      kind: 'conflict',
      line,
      keys,
      identity: known.matchedBy ?? keys[0]!,
      otherLines: [],
      reason: foreign,
    };
  }

  // Unchanged since our last confirmed write, unless asked to check the platform for drift.
  if (
    known.storedHash === hash &&
    !(opts.verifyRemote && known.remote && diffFields(known.remote, body).length > 0)
  ) {
    return { kind: 'unchanged', line, keys, platformId };
  }

  const changes = known.remote ? diffFields(known.remote, body) : undefined;
  if (changes && changes.length === 0) return { kind: 'adopt', line, keys, hash, platformId };

  if (mode === 'create-only') {
    return skip(
      line,
      keys,
      platformId,
      'exists on the platform, and create-only mode changes nothing',
    );
  }

  if (opts.entity === 'members' && !opts.memberUpdates) {
    const action: UnsupportedAction = {
      kind: 'unsupported',
      line,
      keys,
      platformId,
      reason: UNSUPPORTED_MEMBER_UPDATE,
    };
    if (changes) action.changes = changes;
    return action;
  }

  return changes
    ? { kind: 'update', line, keys, hash, body, platformId, changes }
    : { kind: 'update', line, keys, hash, body, platformId };
}

/**
 * Whether the platform's values can change the action `planRecord` gives a
 * row of this hash: where the stored hash differs (an adoption, an update's
 * diff), where the record was found through a key weaker than the row's
 * `external_id` (the ownership rules read the record's), and always with
 * `verifyRemote`. A lookup for planning reads them only there: an unchanged
 * row of a nightly run costs no listed record read and parsed.
 */
export function remoteMatters(
  row: { keys: readonly string[]; hash: string },
  known: Pick<Known, 'storedHash' | 'matchedBy'>,
  verifyRemote: boolean,
): boolean {
  return (
    verifyRemote || known.storedHash !== row.hash || !foundByExternalId(row.keys, known.matchedBy)
  );
}

/** `planRecord` for a batch: `known[i]` is what the store knows of `inputs[i]`. */
export function planBatch<B extends Body>(
  inputs: readonly PlanInput<B>[],
  known: readonly Known[],
  opts: PlanOptions,
): Action<B>[] {
  if (known.length !== inputs.length) {
    throw new RangeError(`planBatch: ${inputs.length} inputs but ${known.length} known states`);
  }
  return inputs.map((input, i) => planRecord(input, known[i] ?? {}, opts));
}

function skip(
  line: number,
  keys: string[],
  platformId: number | undefined,
  reason: string,
): SkipAction {
  return platformId === undefined
    ? { kind: 'skip', line, keys, reason }
    : { kind: 'skip', line, keys, platformId, reason };
}
