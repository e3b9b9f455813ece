/**
 * Which platform record a CRM row is, and whether the row may write to it.
 *
 * A row's identity keys come in priority order (identity.ts). Our state and
 * the platform listing each say which record a key names; the row's record is
 * the one named by its strongest key that either knows (our state first for
 * the same key: it reflects our confirmed writes).
 *
 * Found through anything weaker than the row's own `external_id`, a record may
 * belong to another source: two CRMs with overlapping numeric ids share
 * `crm_company_id` values. Such a match is a conflict, and the record is left
 * untouched, when
 *  - another job wrote the record last (two jobs share a record only through
 *    the same `external_id`), or
 *  - the record carries an `external_id` and the row carries a different one.
 * A record with no `external_id` that no other job wrote is adopted.
 */
import { describeIdentity, type Entity } from './identity.js';

/** The record a row names, and the key that names it. */
export interface Match {
  platformId: number;
  /** The strongest of the row's keys that names the record. */
  key: string;
}

/**
 * The record named by the strongest key: `stateIds[i]` and `listedIds[i]` are
 * what our state and the listing map `keys[i]` to (undefined: nothing).
 */
export function strongestMatch(
  keys: readonly string[],
  stateIds: readonly (number | undefined)[],
  listedIds: readonly (number | undefined)[],
): Match | undefined {
  for (let i = 0; i < keys.length; i++) {
    const id = stateIds[i] ?? listedIds[i];
    if (id !== undefined) return { platformId: id, key: keys[i]! };
  }
  return undefined;
}

/** What is known of the record a row matched, for the ownership rules. */
export interface MatchedRecord {
  platformId: number;
  /** The key that found it (absent: treated as the row's strongest key). */
  matchedBy?: string;
  /** Another job that wrote the record last (absent: this job, or no job we know of). */
  writtenBy?: string;
  /** The platform's values, when known: its `external_id` among them. */
  remote?: Readonly<Record<string, unknown>>;
}

const EXTERNAL = 'x:';

/**
 * Whether the record was found through the row's `external_id` (or the row
 * has no key to tell): such a match is the row's own record, whoever wrote it.
 */
export function foundByExternalId(keys: readonly string[], matchedBy: string | undefined): boolean {
  const by = matchedBy ?? keys[0];
  return by === undefined || by.startsWith(EXTERNAL);
}

/**
 * Why a row may not write to the record it matched, or undefined when it
 * may. Pure: the planner and the verification of creates both ask it.
 */
export function foreignRecordReason(
  entity: Entity,
  keys: readonly string[],
  record: MatchedRecord,
): string | undefined {
  if (foundByExternalId(keys, record.matchedBy)) return undefined;
  const by = record.matchedBy ?? keys[0]!;
  const ours = keys[0]?.startsWith(EXTERNAL) ? keys[0].slice(EXTERNAL.length) : undefined;
  const theirs = externalIdOf(record.remote);
  const through = `found through ${describeIdentity(entity, by)}`;
  if (record.writtenBy !== undefined) {
    const detail =
      theirs !== undefined && ours !== undefined && theirs !== ours
        ? `, its external_id is ${JSON.stringify(theirs)} and this row's ${JSON.stringify(ours)}`
        : ours !== undefined
          ? `, not through this row's external_id ${JSON.stringify(ours)}`
          : '';
    return (
      `platform record ${record.platformId} was written by job ${JSON.stringify(record.writtenBy)} ` +
      `(${through}${detail}); left untouched: two jobs share a record only through the same external_id`
    );
  }
  if (theirs !== undefined && ours !== undefined && theirs !== ours) {
    return (
      `platform record ${record.platformId} has external_id ${JSON.stringify(theirs)} and this row ` +
      `${JSON.stringify(ours)} (${through}); left untouched: they are different records`
    );
  }
  return undefined;
}

function externalIdOf(remote: Readonly<Record<string, unknown>> | undefined): string | undefined {
  const v = remote?.external_id;
  if (typeof v !== 'string') return undefined;
  const t = v.trim();
  return t === '' ? undefined : t;
}
